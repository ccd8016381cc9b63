"""``mlassets prune-transactions``: what killed writers left in the store (transactions older than ``--older-than``,
objects no commit refers to, lakeFS branches), and in the Dagster instance: runs of ingests whose process is gone (a
killed ``mlassets ingest``, or a killed daemon tree) stay STARTED; they are marked failed, saying why. With a daemon
running on the home, its run monitor does that part (and retries them); nothing is done there then."""

from __future__ import annotations

import argparse

from mlassets.core import settings
from mlassets.core.config import ConfigError


def fail_dead_ingests() -> list[str]:
    """Mark the runs of ``<dataset>_ingest`` jobs whose process is gone failed; one line per run."""
    from mlassets.host import daemon_lock
    from mlassets.host.instance import get_instance, prepare_home
    from mlassets.host.run_liveness import dead_runs
    from mlassets.host.run_monitor import free_slots, start_timeout_s

    home = prepare_home()
    if not settings.production() and daemon_lock.held(home):
        return [f"a daemon runs on {home}: its run monitor handles runs whose worker is gone"]
    instance = get_instance()
    try:
        out = []
        for dead in dead_runs(instance, home, start_timeout_s()):
            if not dead.run.job_name.endswith("_ingest"):
                continue
            instance.report_run_failed(dead.run, f"mlassets prune-transactions: {dead.reason}; the run is marked "
                                                  "failed")
            free_slots(instance, dead.run.run_id)
            partition = dead.run.tags.get("dagster/partition", "")
            out.append(f"marked run {dead.run.run_id} ({dead.run.job_name} {partition}) failed: {dead.reason}")
        return out
    finally:
        instance.dispose()


def cmd_prune_transactions(args: argparse.Namespace) -> int:
    from mlassets.core.data.store import open_store

    if args.older_than < 0:
        raise ConfigError(f"--older-than: {args.older_than} is negative")
    store = open_store(args.backend)
    args.backend = store.backend
    repos = args.repo or store.list_repos()
    removed = 0
    for repo in repos:
        for name in store.prune_transactions(repo, args.older_than):
            print(f"{repo}: removed {name}")
            removed += 1
    files, size = store.prune_objects(args.older_than)
    if files:
        print(f"removed {files} stored objects no commit refers to ({size / 1e6:.2f} MB)")
    for line in fail_dead_ingests():
        print(line)
    print(f"pruned transactions older than {args.older_than:g} s in {len(repos)} repositories ({args.backend}): "
          f"{removed} removed, {files} objects")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    prune = sub.add_parser("prune-transactions", help="remove what killed writers left (commits and objects no branch "
                                                      "reaches, lakeFS branches) and fail runs of dead ingests")
    prune.add_argument("--backend", default="", choices=["", "local", "lakefs"],
                       help="the store (default $MLASSETS_STORE, else local; lakefs: settings from LAKECTL_*)")
    prune.add_argument("--older-than", type=float, default=3600.0,
                       help="seconds since the transaction began (default 3600; in-flight ones are younger)")
    prune.add_argument("--repo", action="append", help="only this repository (repeatable; default: all)")
    prune.set_defaults(func=cmd_prune_transactions)
