"""``mlassets prune``: the working area's leftovers of finished training runs (their exported splits, a full copy of
the training data each), listed with their sizes and freed; ``--dry-run`` only lists. A run still in progress (or
queued) in the Dagster instance keeps its files."""

from __future__ import annotations

import argparse

from mlassets.core import paths

MB = 1e6


def active_run_keys() -> set[str]:
    """The working-area keys (first 8 characters of the root run id) of runs not finished yet."""
    import dagster as dg

    from mlassets.host.instance import get_instance

    statuses = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING,
                dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
    instance = get_instance()
    try:
        return {(run.root_run_id or run.run_id)[:8] for run in instance.get_runs(dg.RunsFilter(statuses=statuses))}
    finally:
        instance.dispose()


def cmd_prune(args: argparse.Namespace) -> int:
    import shutil

    from mlassets.core.train.workfiles import exported_splits

    if not args.dry_run:
        from mlassets.core.identity.access import authorize

        authorize("prune", None, "the home's work folders")
    work = paths.home() / "work"
    found = exported_splits(work)
    active = active_run_keys() if found else set()
    freeable = [w for w in found if w.run_key not in active]
    for files in found:
        state = "in progress, kept" if files.run_key in active else ("would free" if args.dry_run else "freed")
        print(f"{files.path.relative_to(paths.home())}  {files.size / MB:.1f} MB  ({state})")
        if state == "freed":
            shutil.rmtree(files.path)
    total = sum(w.size for w in freeable)
    verb = "would free" if args.dry_run else "freed"
    print(f"{verb} {total / MB:.1f} MB: the exported splits of {len(freeable)} finished training run(s) under {work}"
          + (f"; {len(found) - len(freeable)} in progress kept" if len(found) > len(freeable) else ""))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("prune", help="free what finished training runs left in the working area (their exported "
                                          "splits); --dry-run lists it with sizes")
    parser.add_argument("--dry-run", action="store_true", help="list what would be freed, remove nothing")
    parser.set_defaults(func=cmd_prune)
