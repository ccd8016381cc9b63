"""``mlassets run`` on a real stack (the sales example): a rejected candidate is an answer. Its Dagster run succeeds,
``gate_result`` holds the verdict, its check failed, the champion and predictions are skipped, not failed; the exit
code is 3; the MLflow run and version say "rejected"; promoting it needs ``--force``. A passing one still promotes."""

from __future__ import annotations

import dagster as dg
import mlflow
import pytest
import yaml

from mlassets.cli import main
from mlassets.core import tracking
from mlassets.core.config import load_config
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promote import live_version
from mlassets.defs.jobs import pipeline_job_name
from mlassets.defs.keys import DatasetKeys
from mlassets.host.instance import get_instance

pytestmark = pytest.mark.e2e


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _set_limit(config: str, limit: float) -> None:
    with open(config) as f:
        raw = yaml.safe_load(f)
    raw["gate"]["absolute_max_metric"] = limit
    with open(config, "w") as f:
        yaml.safe_dump(raw, f, sort_keys=False)


def test_a_rejection_exits_3_with_a_green_run_and_a_pass_still_promotes(home, tmp_path, capsys):
    assert cli(capsys, "example", "sales", str(tmp_path / "sales"), "--months", "3")[0] == 0
    config = str(tmp_path / "sales" / "sales.yaml")
    _set_limit(config, 0.001)  # no model reaches this MAE: the gate rejects the first candidate
    code, out, err = cli(capsys, "ingest", "--config", config, "--partition", "2024-01", "--partition", "2024-02")
    assert code == 0, err
    code, out, err = cli(capsys, "run", "--config", config)
    assert code == 3, out + err
    assert "reject" in out

    cfg = load_config(config)
    keys, name, instance = DatasetKeys.of(cfg), cfg.model.registered_name, get_instance()
    (run,) = instance.get_runs(dg.RunsFilter(job_name=pipeline_job_name(cfg)))
    assert run.status == dg.DagsterRunStatus.SUCCESS
    partition = run.tags["dagster/partition"]
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=keys.gate_result, asset_partitions=[partition]), limit=1).records
    meta = records[0].asset_materialization.metadata
    assert meta["verdict"].value == "rejected" and "MAE" in meta["reason"].value
    assert meta["rule: absolute_main_metric"].value.startswith("rejected: ")
    events = [e.dagster_event for e in instance.all_logs(run.run_id) if e.dagster_event]
    (check,) = [e.event_specific_data for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"
                and e.event_specific_data.check_name == "gate_passed"]
    assert not check.passed and check.asset_key == keys.gate_result and check.partition == partition
    assert not [e for e in events if e.event_type_value == "STEP_FAILURE"]
    skipped = {e.step_key for e in events if e.event_type_value == "STEP_SKIPPED"}
    assert keys.predictions.to_python_identifier() in skipped
    materialized = {e.asset_key for e in events if e.event_type_value == "ASSET_MATERIALIZATION"}
    assert keys.registered_model in materialized and not {keys.champion, keys.predictions} & materialized

    tracking.configure()
    version = registry.get_version(name, 1)
    assert version.tags["gate"] == "rejected" and version.tags["gate_passed"] == "false"
    assert "gate rejected it" in version.description.splitlines()[0]
    training = mlflow.get_run(version.tags["mlflow_run_id"])
    assert training.info.status == "FINISHED" and training.data.tags["gate"] == "rejected"
    first = training.data.tags["mlflow.note.content"].splitlines()[0]
    assert first.startswith("Rejected: ") and "MAE" in first
    assert live_version(name) is None  # the champion did not move

    code, out, err = cli(capsys, "promote", "1", "--config", config)
    assert code == 2 and "has no passing gate result" in err and "--force --reason TEXT" in err
    assert live_version(name) is None

    _set_limit(config, 25.0)  # a changed config trains a new candidate of the same data
    code, out, err = cli(capsys, "run", "--config", config)
    assert code == 0, out + err
    assert live_version(name) == "2" and registry.get_version(name, 2).tags["gate"] == "passed"
    assert "gate" in mlflow.get_run(registry.get_version(name, 2).tags["mlflow_run_id"]).data.tags
