"""A failure inside the training process is readable (issue 33, case 5): the first line a user sees names the
cause in one sentence, reported by the training process, not ``External execution process failed with code 1``
above a traceback printed twice."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import yaml

from mlassets.cli import main
from mlassets.host.instance import get_instance

pytestmark = pytest.mark.e2e


def test_a_plugin_that_raises_is_named_in_one_sentence(home: str, tmp_path: Path, capsys) -> None:
    assert main(["example", "torch-plugin", str(tmp_path / "mine")]) == 0
    config = tmp_path / "mine" / "flights_plugin.yaml"
    data = yaml.safe_load(config.read_text())
    data["dataset"]["sample_fraction"] = 0.1
    data["training"]["retries"] = 1  # bad input is not retried: one attempt, whatever the policy allows
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    model = tmp_path / "mine" / "model.py"
    source = model.read_text()
    at = source.index("def build(")
    body = source.index("\n", at) + 1
    model.write_text(source[:body] + "    raise ValueError('model.params.hidden must hold positive sizes')\n"
                     + source[body:])
    assert main(["ingest", "--config", str(config), "--partition", "2013-01"]) == 0
    capsys.readouterr()
    assert main(["run", "--config", str(config)]) == 1  # a real failure: not 3, the gate's rejection
    out, err = capsys.readouterr()
    said = (f"training failed: PluginError: model.plugin '{model}:build' failed to build a module: ValueError: "
            "model.params.hidden must hold positive sizes")
    assert said in out + err, out + err
    assert "External execution process failed" not in out + err
    (run,) = get_instance().get_runs(dg.RunsFilter(job_name="flights_plugin_pipeline"))
    assert run.status == dg.DagsterRunStatus.FAILURE  # a broken training still fails the run
    failures = [e for e in get_instance().all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)]
    assert len(failures) == 1  # not retried: the same input fails the same way
    assert failures[0].dagster_event.step_failure_data.user_failure_data.description == said


def test_a_run_stopped_by_its_budget_is_no_failure(home: str, tmp_path: Path, capsys) -> None:
    """Issue 33 case 5: the budget stop trains nothing, on purpose: the Dagster run succeeds with its downstream
    steps skipped and says why (tag ``mlassets/stopped``), the MLflow run is FINISHED with the reason, no version."""
    import mlflow

    from mlassets.core import tracking

    assert main(["example", "sales", str(tmp_path / "sales"), "--months", "1"]) == 0
    config = tmp_path / "sales" / "sales.yaml"
    data = yaml.safe_load(config.read_text())
    data["training"]["budget_hours"] = 1e-9  # any run is over it
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["ingest", "--config", str(config), "--partition", "2024-01"]) == 0
    capsys.readouterr()
    assert main(["run", "--config", str(config)]) == 1  # asked to train, it did not: said, exit code 1
    out, err = capsys.readouterr()
    assert "not trained" in out and "over training.budget_hours 1e-09 h" in out
    assert "1 of 1 versions were not trained" in err and "failed" not in out + err
    (run,) = get_instance().get_runs(dg.RunsFilter(job_name="sales_pipeline"))
    assert run.status == dg.DagsterRunStatus.SUCCESS and "training.epochs" in run.tags["mlassets/stopped"]
    assert not get_instance().all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    tracking.configure()
    (logged,) = mlflow.search_runs(search_all_experiments=True, output_format="list")
    assert logged.info.status == "FINISHED" and logged.data.tags["mlassets.stopped"] == "over budget"
    assert mlflow.MlflowClient().search_model_versions("name = 'sales_units'") == []
