"""`mlassets fleet` (and its `--json`) shows the Dagster runs that carry a job spec beside the jobs of `mlassets fleet
serve`, on a real instance and lease table: a run waiting in Dagster's queue and one whose training step waits for a
`gpu` slot (with their reasons), a running run with its ranks' heartbeats, a run preempted with the steps it lost
(recorded by the training step's stop, ``preempted_failure``) and the run requeued for it, an overrun with no
heartbeat left (steps lost unknown), and each team's GPUs and money counting its Dagster runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.utils import make_new_run_id

from mlassets.cli import main
from mlassets.core.fleet import heartbeat as hb
from mlassets.core.fleet.config import load_fleet
from mlassets.core.fleet.policy import GPU_POOL
from mlassets.core.fleet.service import fleet_table, submit
from mlassets.core.fleet.spec import JobSpec
from mlassets.defs.fleet.admission import WAITS_TAG
from mlassets.defs.fleet.runs import OVERRUN_TAG, PREEMPTED_TAG, RESUME_TAG, preempted_failure
from mlassets.defs.fleet.view import attempt
from mlassets.host.instance import get_instance
from mlassets.host.run_origin import job_origin

HOUR = 3600.0
WAITS = "waits at position 1 in the queue for 1 free GPUs of capacity spot-first (0 of 4 free)"


def _spec(team: str, priority: str = "batch", ranks: int = 1, minutes: float = 60.0) -> JobSpec:
    return JobSpec(team=team, priority=priority, ranks=ranks, gpus_per_rank=1, expected_minutes=minutes,
                   capacity="spot-first", preemptible=True, checkpoint_every_minutes=10.0)


def _run(instance: dg.DagsterInstance, spec: JobSpec, status: dg.DagsterRunStatus, **tags: str) -> str:
    run = instance.add_run(dg.DagsterRun(
        job_name="sales_pipeline", run_id=make_new_run_id(), status=status,
        tags={**spec.tags(load_fleet()), "dagster/partition": "2024-01", **tags},
        remote_job_origin=job_origin("here", "__repository__", "sales_pipeline")))
    return run.run_id


def _event(instance: dg.DagsterInstance, run_id: str, kind: DagsterEventType, at: float) -> None:
    """A run event as its run worker reports it, at ``at`` (the run record's start or end time)."""
    instance.report_dagster_event(DagsterEvent(kind.value, "sales_pipeline"), run_id, timestamp=at)


def _beat(lease: str, ranks: int, step: int, checkpoint_step: int) -> None:
    """Each rank's heartbeat, by the real writer (the step reached, the last checkpoint's)."""
    hb.note(step=step, checkpoint_step=checkpoint_step)
    for rank in range(ranks):
        hb.Heartbeat(fleet_table(), lease, rank, 60.0).beat()


@pytest.fixture
def fleet_home(home: str, tmp_path: Path) -> dict[str, str]:
    instance, fleet, table = get_instance(), load_fleet(), fleet_table()
    now = time.time()
    job, _ = submit(table, fleet, "serve-batch", _spec("research", ranks=2), ["true"])  # a fleet serve job
    table.update(job, state="running", pool="spot", started=now, spent=12.5)
    runs = {"serve": str(job)}
    runs["queued"] = _run(instance, _spec("product", "urgent"), dg.DagsterRunStatus.QUEUED)
    runs["slot"] = _run(instance, _spec("product"), dg.DagsterRunStatus.STARTED, **{WAITS_TAG: WAITS})
    runs["running"] = _run(instance, _spec("research", ranks=2), dg.DagsterRunStatus.NOT_STARTED)
    _event(instance, runs["running"], DagsterEventType.RUN_START, now - HOUR)
    _beat(hb.run_lease(runs["running"]), 2, 40, 30)
    storage = instance.event_log_storage
    storage.set_concurrency_slots(GPU_POOL, 1)
    storage.claim_concurrency_slot(GPU_POOL, runs["running"], "train")  # holds the one `gpu` slot
    storage.claim_concurrency_slot(GPU_POOL, runs["slot"], "train")  # waits for it
    why = f"preempted for run {runs['queued'][:8]} (urgent, team product)"
    runs["preempted"] = _run(instance, _spec("research"), dg.DagsterRunStatus.NOT_STARTED, **{PREEMPTED_TAG: why})
    _event(instance, runs["preempted"], DagsterEventType.RUN_START, now - 2 * HOUR)
    _beat(hb.run_lease(runs["preempted"]), 1, 57, 50)
    preempted_failure(instance, runs["preempted"], Path(home) / "no-checkpoint")  # its training step, terminated
    _event(instance, runs["preempted"], DagsterEventType.RUN_CANCELED, now - HOUR)
    runs["requeued"] = _run(instance, _spec("research"), dg.DagsterRunStatus.QUEUED, **{
        RESUME_TAG: runs["preempted"], "dagster/run_key": f"resume:{runs['preempted']}"})
    runs["overrun"] = _run(instance, _spec("default"), dg.DagsterRunStatus.NOT_STARTED,
                           **{OVERRUN_TAG: "overrun: ran 91.0 min, 1.5x its expected 60 min; stopped"})
    _event(instance, runs["overrun"], DagsterEventType.RUN_START, now - 2 * HOUR)
    _event(instance, runs["overrun"], DagsterEventType.RUN_CANCELED, now - HOUR)
    runs["done"] = _run(instance, _spec("product"), dg.DagsterRunStatus.NOT_STARTED)
    _event(instance, runs["done"], DagsterEventType.RUN_START, now - 3 * HOUR)
    _event(instance, runs["done"], DagsterEventType.RUN_SUCCESS, now - 2 * HOUR)
    instance.dispose()
    return runs


def test_mlassets_fleet_shows_dagster_runs_beside_fleet_jobs(fleet_home: dict[str, str], capsys) -> None:
    r = {k: v[:8] for k, v in fleet_home.items()}
    price = max(p.price_per_gpu_hour for p in load_fleet().pools.values())  # spot-first is priced at the dearest
    assert main(["fleet"]) == 0
    out = capsys.readouterr().out
    queue = out[out.index("queue:"):out.index("leases:")].splitlines()[1:]
    assert queue == [f"  #1 dagster run {r['queued']} sales_pipeline 2024-01 (product, urgent, 1 GPUs): queued in "
                     "Dagster",
                     f"  #2 dagster run {r['slot']} sales_pipeline 2024-01 (product, batch, 1 GPUs): {WAITS}",
                     f"  #3 dagster run {r['requeued']} sales_pipeline 2024-01 (research, batch, 1 GPUs): queued in "
                     "Dagster"]
    leases = out[out.index("leases:"):out.index("teams:")]
    assert f"job {r['serve']} serve-batch (research): 2 GPUs of spot, running, no heartbeat yet" in leases
    assert f"dagster run {r['running']} sales_pipeline 2024-01 (research): 2 GPUs, running, last heartbeat " in leases
    assert "from 2 rank(s); step 40, checkpoint at step 30" in leases
    teams = out[out.index("teams:"):out.index("preemptions")]
    assert "research: 4 of 4 GPUs; " in teams  # the fleet serve job's 2 and the Dagster run's 2
    assert f"product: 0 of 2 GPUs; spent ₹{price:,.0f}" in teams  # the finished run: 1 GPU for an hour
    events = out[out.index("preemptions"):out.index("finished:")].splitlines()[1:]
    assert sorted(events) == sorted([  # in the order they happened (here: the stop recorded now, after the overrun)
        f"  dagster run {r['preempted']}: preempted (preempted for run {r['queued']} (urgent, team product): no "
        f"checkpoint was written), lost 7 steps",
        f"  dagster run {r['overrun']}: overrun (overrun: ran 91.0 min, 1.5x its expected 60 min; stopped), steps "
        "lost unknown"])
    finished = out[out.index("finished:"):]
    assert f"dagster run {r['done']} sales_pipeline 2024-01 (product): done" in finished
    assert f"dagster run {r['preempted']} sales_pipeline 2024-01 (research): stopped after 1 attempt(s): " \
           f"preempted for run {r['queued']} (urgent, team product); requeued as dagster run {r['requeued']}" \
           in finished

    assert main(["fleet", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert [(q["origin"], q["id"]) for q in view["queue"]] == \
        [("dagster", fleet_home[k]) for k in ("queued", "slot", "requeued")]
    beating = {lease["id"]: lease for lease in view["leases"]}[fleet_home["running"]]
    assert (beating["ranks_beating"], beating["step"], beating["checkpoint_step"]) == (2, 40, 30)
    assert beating["last_heartbeat_s"] >= 0  # its age now (no bound: a loaded machine may take long to get here)
    teams = {t["team"]: t for t in view["teams"]}
    assert teams["research"]["gpus_in_use"] == 4
    assert teams["research"]["spent"] == pytest.approx(12.5 + 2 * price + price, abs=1.0)  # 2 GPUs 1 h, 1 GPU 1 h
    assert teams["product"]["spent"] == pytest.approx(price, abs=0.01)
    assert teams["product"]["reserved"] == pytest.approx(2 * price)  # the two queued runs' hour each
    assert [(e["ref"], e["kind"], e["lost_steps"]) for e in view["events"]] == \
        [(f"dagster run {r['overrun']}", "overrun", "unknown"), (f"dagster run {r['preempted']}", "preempted", 7)]
    states = {j["ref"]: (j["origin"], j["state"]) for j in view["jobs"]}
    assert states[f"job {r['serve']}"] == ("fleet serve", "running")
    assert states[f"dagster run {r['overrun']}"] == ("dagster", "stopped")
    attempts = {j["id"]: j["attempts"] for j in view["jobs"] if j["origin"] == "dagster"}
    assert (attempts[fleet_home["done"]], attempts[fleet_home["preempted"]], attempts[fleet_home["queued"]]) == \
        (1, 1, 0)  # a finished run ran once; a queued one not yet


def test_a_requeued_run_is_the_next_attempt_of_its_job() -> None:
    resumes = {"r3": "r2", "r2": "r1", "r1": "", "other": ""}
    assert [attempt(r, resumes) for r in ("r1", "r2", "r3", "other")] == [1, 2, 3, 1]
    assert attempt("r2", {"r2": "gone"}) == 2  # the run it resumes, pruned from the instance, still counted


def test_a_started_run_holds_gpus_only_from_its_training_step(home: str, capsys) -> None:
    """A started run whose training step neither holds a `gpu` slot nor beats (its snapshot and features steps)
    is `starting`: no lease, none of its team's GPUs; one whose step holds the slot, or whose ranks beat, holds them."""
    instance = get_instance()
    early = _run(instance, _spec("product", ranks=2), dg.DagsterRunStatus.NOT_STARTED)
    _event(instance, early, DagsterEventType.RUN_START, time.time() - 60)
    slot = _run(instance, _spec("research"), dg.DagsterRunStatus.NOT_STARTED)
    _event(instance, slot, DagsterEventType.RUN_START, time.time() - 60)
    instance.event_log_storage.set_concurrency_slots(GPU_POOL, 1)
    instance.event_log_storage.claim_concurrency_slot(GPU_POOL, slot, "train")
    beating = _run(instance, _spec("research"), dg.DagsterRunStatus.NOT_STARTED)
    _event(instance, beating, DagsterEventType.RUN_START, time.time() - 60)
    _beat(hb.run_lease(beating), 1, 3, 0)
    instance.dispose()
    assert main(["fleet", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    states = {j["id"]: j["state"] for j in view["jobs"]}
    assert states == {early: "starting", slot: "running", beating: "running"}
    assert {lease["id"] for lease in view["leases"]} == {slot, beating}
    teams = {t["team"]: t["gpus_in_use"] for t in view["teams"]}
    assert (teams["product"], teams["research"]) == (0, 2)
    assert main(["fleet"]) == 0
    out = capsys.readouterr().out
    assert f"started, before training (no GPUs held):\n  dagster run {early[:8]} sales_pipeline 2024-01 (product, " \
           "2 GPUs once training)" in out
