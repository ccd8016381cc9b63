"""A gate rejection is an answer: the verdict materializes with its reasons, its check fails, what needs a passing
gate is skipped (not failed), the run succeeds and its MLflow run ends FINISHED with the verdict; a crash still fails.
(The shapes of ``gate_result`` and ``champion`` on a small graph; the real pipeline: ``test_pipeline_e2e``.)"""

from collections.abc import Iterator

import dagster as dg
import mlflow

from mlassets.core import tracking
from mlassets.core.evaluate.gate import GateResult
from mlassets.core.evaluate.gate_rules import RuleResult
from mlassets.defs.resources import mlflow_tracking
from mlassets.defs.verdict import (
    GATE_CHECK,
    GATE_FILE,
    GATE_TAG,
    NOTE_TAG,
    gate_check_result,
    gate_check_spec,
    gate_metadata,
    tag_mlflow_run,
)

PARTITIONS = dg.StaticPartitionsDefinition(["2013-03"])
REASON = "slice carrier=MQ: MAE 22.6 vs champion 18.3 (+23.2%, limit +8%)"


def _gate(passed: bool) -> GateResult:
    rules = [RuleResult(name="main_metric", passed=True, value=18.0, limit=18.5),
             RuleResult(name="slice carrier=MQ", passed=passed, value=0.232, limit=0.08,
                        reason="" if passed else REASON)]
    return GateResult(passed=passed, has_champion=True, rules=rules, gated_against="1")


def _graph(passed: bool | None) -> list:
    @dg.asset(key="gate_result", partitions_def=PARTITIONS, required_resource_keys={"mlflow"},
              check_specs=[gate_check_spec(dg.AssetKey("gate_result"), PARTITIONS)])
    def gate_result(context: dg.AssetExecutionContext) -> Iterator[object]:
        if passed is None:
            raise ValueError("a real crash")
        gate = _gate(passed)
        tag_mlflow_run(gate)
        yield dg.Output(None, metadata=gate_metadata(gate))
        yield gate_check_result(gate, "2013-03")

    @dg.asset(key="champion", partitions_def=PARTITIONS, deps=[gate_result], output_required=False)
    def champion() -> Iterator[dg.Output]:
        if passed:
            yield dg.Output(None)

    @dg.asset(key="predictions", partitions_def=PARTITIONS, deps=[champion])
    def predictions() -> None:
        return None

    return [gate_result, champion, predictions]


def _run(passed: bool | None) -> tuple[dg.ExecuteInProcessResult, dg.DagsterInstance, object]:
    resources = {"mlflow": mlflow_tracking.configured({"experiment_name": "verdict"})}
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(_graph(passed), instance=instance, partition_key="2013-03", resources=resources,
                            raise_on_error=False)
    tracking.configure()
    (run,) = mlflow.search_runs(experiment_names=["verdict"], output_format="list")
    return result, instance, run


def _events(result: dg.ExecuteInProcessResult, kind: str) -> list[str]:
    return [e.step_key for e in result.all_events if e.event_type_value == kind]


def test_a_rejection_materializes_fails_its_check_and_skips_what_needs_a_pass(home: str) -> None:
    result, instance, run = _run(False)
    assert result.success and instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.SUCCESS
    (materialized,) = result.get_asset_materialization_events()
    meta = materialized.materialization.metadata
    assert materialized.asset_key == dg.AssetKey("gate_result") and materialized.partition == "2013-03"
    assert (meta["verdict"].value, meta["reason"].value) == ("rejected", REASON)
    assert meta["rule: slice carrier=MQ"].value == f"rejected: {REASON}" and meta["rule: main_metric"].value == "passed"
    (check,) = result.get_asset_check_evaluations()  # one evaluation per materialization: list and panel agree
    assert (check.check_name, check.passed, check.severity) == (GATE_CHECK, False, dg.AssetCheckSeverity.ERROR)
    assert _events(result, "STEP_SKIPPED") == ["predictions"]
    assert not _events(result, "STEP_FAILURE")
    assert not instance.get_latest_materialization_event(dg.AssetKey("champion"))
    assert run.info.status == "FINISHED" and run.data.tags[GATE_TAG] == "rejected"  # it trained; the gate said no
    assert run.data.tags[NOTE_TAG].splitlines()[0] == f"Rejected: {REASON}"
    whole = GateResult.from_json(mlflow.artifacts.load_text(f"{run.info.artifact_uri}/{GATE_FILE}"))
    assert whole == _gate(False)  # every rule's value and limit, beside the version's verdict tags


def test_a_pass_materializes_everything(home: str) -> None:
    result, instance, run = _run(True)
    assert result.success
    assert {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()} == {
        "gate_result", "champion", "predictions"}
    assert all(c.passed for c in result.get_asset_check_evaluations())
    assert run.info.status == "FINISHED" and run.data.tags[GATE_TAG] == "passed"
    assert not run.data.tags.get(NOTE_TAG, "").startswith("Rejected")


def test_any_other_failure_still_fails_the_run(home: str) -> None:
    result, instance, run = _run(None)
    assert not result.success and _events(result, "STEP_FAILURE") == ["gate_result"]
    assert instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.FAILURE
    assert run.info.status == "FAILED" and GATE_TAG not in run.data.tags
