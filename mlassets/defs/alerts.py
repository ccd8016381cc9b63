"""A failed run tells the owners of its dataset which step failed and why: a line in the alerts log
(``$MLASSETS_HOME/alerts/alerts.jsonl``) and the sensor's log always, a webhook POST when
``$MLASSETS_ALERT_WEBHOOK`` is set. A blocking check that failed (validation) stopped the run: it is named with its
description, the reason. A gate rejection is an answer, not a failure: its run succeeds and alerts no one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.defs.fleet.runs import fleet_stop
from mlassets.defs.jobs import dataset_of_job
from mlassets.defs.lookup import run_url

if TYPE_CHECKING:
    from mlassets.core.automation.alerts import Alert

SENSOR = "mlassets_run_failures"


def alerts_log() -> str:
    return str(paths.home() / "alerts" / "alerts.jsonl")


def _failed_check(instance: dg.DagsterInstance, run_id: str) -> tuple[str, str] | None:
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
    for rec in records:
        evaluation = rec.event_log_entry.dagster_event.event_specific_data
        if evaluation is not None and not evaluation.passed:
            name = f"check {evaluation.asset_key.to_user_string()}:{evaluation.check_name}"
            return name, evaluation.description or "failed"
    return None


def _failed_step(context: dg.RunFailureSensorContext) -> tuple[str, str]:
    for event in context.get_step_failure_events():
        data = event.step_failure_data
        text = data.user_failure_data.description if data and data.user_failure_data else ""
        error = data.error if data else None
        while not text and error is not None:
            text, error = (error.message.strip() if error.cause is None else ""), error.cause
        return event.step_key or "a step", one_line(text)
    return "the run", one_line(context.failure_event.message or "")


def one_line(text: str) -> str:
    """A failure's description as one line of at most 2000 characters: a heading that ends in a colon keeps the
    lines it introduces (``partition 2024-07 was not ingested: column 'units' is missing; ...``)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "failed"
    head, rest = lines[0], lines[1:]
    joined = head + (" " if head.endswith(":") else "; ") + "; ".join(rest) if rest else head
    return joined[:2000]


def describe(context: dg.RunFailureSensorContext, configs: list[PipelineConfig]) -> Alert:
    from mlassets.core.automation.alerts import Alert

    run = context.dagster_run
    owners = {c.dataset.name: list(c.automation.owners) for c in configs}
    dataset = dataset_of_job(run.job_name, list(owners))
    step, reason = _failed_check(context.instance, run.run_id) or _failed_step(context)
    return Alert(job=run.job_name, run_id=run.run_id, partition=run.tags.get("dagster/partition", ""), step=step,
                 reason=reason, owners=owners.get(dataset or "", ["(no owner: not a dataset's job)"]),
                 run_url=run_url(run.run_id), tags={k: v for k, v in run.tags.items() if k.startswith("mlassets/")})


def failure_sensor(configs: list[PipelineConfig]) -> dg.SensorDefinition:
    @dg.run_failure_sensor(name=SENSOR, default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=5,
                           description="Tells the owners of a dataset which step of its failed run failed, and why.")
    def run_failures(context: dg.RunFailureSensorContext) -> None:
        from mlassets.core.automation.alerts import post, record

        why = fleet_stop(context.dagster_run)  # preempted or lease lost (requeued), overrun: stopped, not a failure
        if why:
            context.log.info(f"run {context.dagster_run.run_id[:8]}: {why}")
            return
        alert = describe(context, configs)
        record(alert, alerts_log())
        context.log.error(alert.line())
        problem = post(alert)
        if problem:
            context.log.warning(f"alert for run {alert.run_id[:8]}: {problem}")

    return run_failures
