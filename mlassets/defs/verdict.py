"""A gate rejection is a verdict, not a crash: the step still fails (the partition shows red wherever Dagster lists
partitions), but the reason comes first everywhere a person looks, and the MLflow run that trained the candidate
ends FINISHED with the verdict as a tag.

- the partition: an observation of the asset for that partition, described by the reason (Dagster's partition
  page lists a partition's observations under the "Run … failed" line; a failed step records no event there);
- the run: a ``dg.Failure`` whose description is the reason, marked as a verdict in its metadata;
- MLflow: ``gate_verdict`` on the training run (``passed`` or ``rejected: …``); ``mlflow_tracking`` ends a run
  whose only failed steps are verdicts FINISHED.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg

VERDICT = "verdict"  # the metadata key that marks a step failure as the gate's verdict
VERDICT_TAG = "gate_verdict"  # on the MLflow training run
REJECTED = "rejected"


def verdict_text(passed: bool, reasons: Iterable[str]) -> str:
    """``passed`` or ``rejected: <every reason, joined>``."""
    return "passed" if passed else f"{REJECTED}: " + ("; ".join(reasons) or "the gate failed")


def tag_mlflow_run(passed: bool, reasons: Iterable[str]) -> None:
    """The verdict as a tag of the active MLflow run (the training run of this Dagster run)."""
    import mlflow

    if mlflow.active_run() is not None:
        mlflow.set_tag(VERDICT_TAG, verdict_text(passed, reasons)[:5000])


def observe_rejection(context: dg.AssetExecutionContext, description: str,
                      metadata: Mapping[str, object]) -> None:
    """Record the reason on the rejected partition itself, before the step fails."""
    context.log_event(dg.AssetObservation(asset_key=context.asset_key, partition=context.partition_key,
                                          description=description,
                                          metadata={VERDICT: REJECTED, "reason": description, **metadata}))


def rejection_failure(description: str, metadata: Mapping[str, object] | None = None) -> dg.Failure:
    """The step's failure: the reason as its description (its first line), no retry, marked a verdict."""
    return dg.Failure(description=description, metadata={VERDICT: REJECTED, **(metadata or {})},
                      allow_retries=False)


def is_verdict(failure: object) -> bool:
    """Whether a ``StepFailureData`` is a gate verdict (``rejection_failure``), not a crash."""
    user = getattr(failure, "user_failure_data", None)
    value = (getattr(user, "metadata", None) or {}).get(VERDICT)
    return getattr(value, "value", value) == REJECTED
