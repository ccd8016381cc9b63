"""A gate rejection is a verdict: the step fails with the reason first and no retry, the partition holds the reason,
and the MLflow run that trained ends FINISHED with the verdict as a tag; any other failure still ends it FAILED."""

import dagster as dg
import mlflow

from mlassets.core import tracking
from mlassets.defs.resources import mlflow_tracking
from mlassets.defs.verdict import (
    REJECTED,
    VERDICT_TAG,
    is_verdict,
    observe_rejection,
    rejection_failure,
    tag_mlflow_run,
)

PARTITIONS = dg.StaticPartitionsDefinition(["2013-03"])
REASON = "gate rejected 2013-03 · ab12cd34: slice carrier=MQ: MAE 22.6 vs champion 18.3 (+23.2%, limit +8%)."


@dg.asset(partitions_def=PARTITIONS, required_resource_keys={"mlflow"})
def rejected(context: dg.AssetExecutionContext) -> None:
    tag_mlflow_run(False, ["slice carrier=MQ: MAE 22.6 vs champion 18.3 (+23.2%, limit +8%)"])
    observe_rejection(context, REASON, {"rules": 3})
    raise rejection_failure(REASON, {"failed_rules": "- slice carrier=MQ"})


@dg.asset(partitions_def=PARTITIONS, required_resource_keys={"mlflow"})
def crashed(context: dg.AssetExecutionContext) -> None:
    raise ValueError("a real crash")


def _run(home: str, asset: dg.AssetsDefinition) -> tuple[dg.ExecuteInProcessResult, object, list]:
    resources = {"mlflow": mlflow_tracking.configured({"experiment_name": "verdict"})}
    with dg.instance_for_test() as instance:
        result = dg.materialize([asset], instance=instance, partition_key="2013-03", resources=resources,
                                raise_on_error=False)
        observations = instance.fetch_observations(asset.key, limit=5).records
    tracking.configure()
    (run,) = mlflow.search_runs(experiment_names=["verdict"], output_format="list")
    return result, run, observations


def test_a_rejection_is_a_finished_run_with_the_reason_first(home: str) -> None:
    result, run, observations = _run(home, rejected)
    assert not result.success
    (failure,) = [e.step_failure_data for e in result.all_events if e.is_step_failure]
    assert is_verdict(failure) and failure.user_failure_data.description == REASON  # the failure's first words
    assert run.info.status == "FINISHED"  # it trained; the gate said no
    assert run.data.tags[VERDICT_TAG] == f"{REJECTED}: slice carrier=MQ: MAE 22.6 vs champion 18.3 (+23.2%, limit +8%)"
    (observed,) = observations  # what the red partition's page lists
    event = observed.asset_observation
    assert event.partition == "2013-03" and event.description == REASON and event.metadata["verdict"].value == REJECTED


def test_any_other_failure_still_ends_the_run_failed(home: str) -> None:
    result, run, observations = _run(home, crashed)
    assert not result.success and not observations
    (failure,) = [e.step_failure_data for e in result.all_events if e.is_step_failure]
    assert not is_verdict(failure)
    assert run.info.status == "FAILED" and VERDICT_TAG not in run.data.tags
