"""The fleet on Dagster's own run queue: a run carries its job spec as tags (``mlassets/fleet.*``, ``mlassets/team``)
and its priority class as ``dagster/priority`` (the queue dequeues higher first); the queue caps each team's runs
with one ``tag_concurrency_limits`` entry per team (``queue_config``). What the queue cannot say (one run holding
several GPU slots, stopping a running run for an urgent one) is ``mlassets.core.fleet.scheduler``."""

from __future__ import annotations

from typing import Any

from mlassets.core.config import ConfigError, PipelineConfig
from mlassets.core.fleet.config import FleetConfig, load_fleet
from mlassets.core.fleet.policy import LEASE_LOST, OVERRUN, PREEMPTED, REQUEUED, lost_steps
from mlassets.core.fleet.spec import PRIORITY_TAG, TAG, TEAM_TAG, JobSpec, from_tags, job_spec


def fleet_run_tags(cfg: PipelineConfig, fleet: FleetConfig | None = None) -> dict[str, str]:
    """The run's job spec as tags; ``dagster/priority`` from its class when the fleet knows the class. None without
    a ``fleet`` section in the config: its runs are not fleet jobs."""
    if cfg.fleet is None:
        return {}
    try:
        fleet = fleet or load_fleet()
    except ConfigError:
        fleet = None  # a broken fleet.yaml is named by `mlassets fleet`; the run keeps its spec tags
    spec = job_spec(cfg)
    known = fleet is not None and spec.priority in fleet.priority_classes
    tags = spec.tags(fleet if known else None)
    if not known:
        tags.pop(PRIORITY_TAG, None)
    return tags


def run_spec(run: Any) -> JobSpec | None:
    """The job spec a Dagster run carries in its tags (None: no run, no spec, or tags that do not parse)."""
    try:
        return from_tags(run.tags) if run is not None else None
    except ConfigError:
        return None


def recorded_tags(run_tags: dict[str, str]) -> dict[str, str]:
    """The job spec tags of a Dagster run, for its MLflow run (so the registered model records them)."""
    return {k: v for k, v in run_tags.items() if k.startswith(TAG) or k in (TEAM_TAG, PRIORITY_TAG)}


def queue_config(fleet: FleetConfig) -> dict[str, Any]:
    """The ``concurrency.runs`` section of a dagster.yaml: each team's runs at most its GPU quota (a run takes at
    least one GPU; the GPUs a run holds beyond one are counted by the fleet's lease table)."""
    limits = [{"key": TEAM_TAG, "value": team, "limit": spec.gpu_quota} for team, spec in fleet.teams.items()]
    return {"concurrency": {"runs": {"tag_concurrency_limits": limits}}}


PREEMPTED_TAG = "mlassets/preempted"  # a run stopped for a more urgent one (canceled, requeued): not a failure
LEASE_LOST_TAG = "mlassets/lease_lost"  # a run whose training ranks stopped renewing its lease (canceled, requeued)
OVERRUN_TAG = "mlassets/overrun"  # a run stopped past overrun_factor x its expected runtime (canceled, not requeued)
OVERRUN_WARNED_TAG = "mlassets/overrun_warned"  # a run past its expected runtime, warned once
STOP_TAGS = (PREEMPTED_TAG, LEASE_LOST_TAG, OVERRUN_TAG)  # stopped by the fleet on purpose: not a failure
STOP_KINDS = {PREEMPTED_TAG: PREEMPTED, LEASE_LOST_TAG: LEASE_LOST, OVERRUN_TAG: OVERRUN}  # fleet serve's names
REQUEUE_TAGS = tuple(t for t, kind in STOP_KINDS.items() if kind in REQUEUED)  # resumed from the last checkpoint
RESUME_TAG = "mlassets/resume_of"  # a requeued run: the preempted run whose working area (checkpoints) it resumes


def work_run_id(run: Any) -> str:
    """The run whose working area a training step uses: a requeued run's preempted run, a re-execution's root."""
    return run.tags.get(RESUME_TAG) or run.root_run_id or run.run_id


def fleet_stop(run: Any) -> str:
    """Why the fleet stopped ``run`` on purpose (preempted, lease lost, overrun), or ''."""
    return next((run.tags[t] for t in STOP_TAGS if run is not None and run.tags.get(t)), "")


def stop_kind(run: Any) -> str:
    """How the fleet stopped ``run`` (``preempted``, ``lease-lost``, ``overrun``: its event's kind), or ''."""
    return next((STOP_KINDS[t] for t in STOP_TAGS if run is not None and run.tags.get(t)), "")


def training_env(run: Any) -> dict[str, str]:
    """The training ranks renew the run's lease (``dagster:<run id>`` in the home's ``fleet.db``) every heartbeat;
    a preemptible run's training process checkpoints and exits as preempted on SIGTERM or SIGINT."""
    from mlassets.core import paths
    from mlassets.core.fleet import heartbeat as hb
    from mlassets.core.train.torch_run.preempt import PREEMPTIBLE_ENV

    try:
        every = load_fleet().lease.heartbeat_s
    except ConfigError:
        every = 30.0
    env = {hb.DB_ENV: str(paths.home() / "fleet.db"), hb.JOB_ENV: hb.run_lease(run.run_id), hb.EVERY_ENV: str(every)}
    return {**env, PREEMPTIBLE_ENV: "1"} if run.tags.get(f"{TAG}preemptible") == "true" else env


def grace_s() -> float:
    """How long a terminated run's training process has to write its checkpoint (fleet.yaml ``grace_s``)."""
    try:
        return load_fleet().grace_s
    except ConfigError:
        return 60.0


def preempted_failure(instance: Any, run_id: str, out_dir: Any) -> Any:
    """For a training step terminated because the fleet stopped its run (preempted, lease lost, overrun): the step's
    failure (``dg.Failure``, never retried, so that the run ends canceled and its requeued run resumes); else None.
    Ranks that still beat for the run's lease after the grace period (a SIGSTOPped or hung rank) are SIGKILLed. The
    lease table records the stop as an event of the lease with the steps lost (none when the checkpoint of the step
    reached was written, else the steps since the checkpoint at the last heartbeat; no event when neither is known)."""
    import dagster as dg

    from mlassets.core.fleet import heartbeat as hb
    from mlassets.core.fleet.service import fleet_table
    from mlassets.core.train.outcome import read_outcome

    run = instance.get_run_by_id(run_id)
    why = fleet_stop(run)
    if not why:
        return None
    table, lease = fleet_table(), hb.run_lease(run_id)
    beats = table.heartbeats(lease)
    killed = hb.kill_ranks(table, lease)
    step = getattr(read_outcome(out_dir), "step", None)  # preempted: the step whose checkpoint is written
    written = f"its checkpoint of step {step} is written" if step is not None else "no checkpoint was written"
    lost = 0 if step is not None else lost_steps(beats)
    if lost is not None:
        table.event(lease, stop_kind(run), f"{why}: {written}", lost)
    then = "a requeued run resumes" if any(run.tags.get(t) for t in REQUEUE_TAGS) else "not requeued"
    killed_text = f"; rank process(es) {', '.join(map(str, killed))} killed" if killed else ""
    return dg.Failure(description=f"{why}: {written}{killed_text}; {then}", allow_retries=False)
