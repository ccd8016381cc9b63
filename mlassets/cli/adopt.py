"""``mlassets adopt VERSION``: a version registered before the registration history existed, checked and written
into it (``core.registry.adopt``); until then every loader and ``promote`` refuse it.

The command adds the evidence only the Dagster instance holds: the run the version's record names materialized
this dataset's ``registered_model`` as this model name and version number.
"""

from __future__ import annotations

import argparse
import sys


def dagster_problem(dataset: str, name: str, number: str, run_id: str) -> str | None:
    """Why the instance does not show Dagster run ``run_id`` registering ``name`` version ``number`` (None: it does)."""
    import dagster as dg

    from mlassets.core.naming import asset_path
    from mlassets.host.instance import get_instance

    key = dg.AssetKey(asset_path(dataset, "registered_model"))
    instance = get_instance()
    if instance.get_run_by_id(run_id) is None:
        return f"Dagster run {run_id or '(none)'}, which its record names, is not in this home's instance"
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
    for entry in records:
        event = entry.event_log_entry.dagster_event
        if event is None or event.asset_key != key:
            continue
        meta = event.event_specific_data.materialization.metadata
        said = (getattr(meta.get("model_name"), "value", None), str(getattr(meta.get("version"), "value", "")))
        if said == (name, number):
            return None
    return f"Dagster run {run_id} materialized no {key.to_user_string()} as {name!r} version {number}"


def cmd_adopt(args: argparse.Namespace) -> int:
    from mlassets.core.registry import adopt, versions
    from mlassets.core.registry.promotion import current_user
    from mlassets.core.tracking import connect

    connect()
    number = args.version.removeprefix("v")
    version = versions.get_version(args.model, number)
    record = versions.record_of(version)
    problem = dagster_problem(record.dataset, args.model, number, record.dagster_run_id)
    entry = adopt.adopt(version, who=f"{current_user()} (mlassets adopt)", more=[problem] if problem else [])
    print(f"{args.model} v{number}: adopted into the registration history (seq {entry.seq}); its run "
          f"{version.run_id}, folder and record checked", file=sys.stdout)
    return 0


def add_command(sub: argparse._SubParsersAction, model_help: str, guarded) -> None:  # noqa: ANN001
    adopt = sub.add_parser("adopt", help="write a version registered before the registration history into it, "
                                         "after checking its run, folder and record")
    adopt.add_argument("version", help="model version number (3 or v3)")
    adopt.add_argument("--model", default="", help=model_help)
    adopt.add_argument("--config", default="", help="or the dataset config whose model it is")
    adopt.set_defaults(func=guarded(cmd_adopt))
