"""Dagster runs preempted and requeued, with a real daemon, code server and instance, and one fake GPU slot on the
CPU (the `gpu` pool holds one training step): a preemptible batch run trains; an urgent run of another team
reaches its training step and waits for the slot; the batch run is terminated the Dagster way, its training
process writes its checkpoint and exits as preempted, the run ends canceled and tagged preempted (no failure
alert); the urgent run trains; the batch run is requeued and resumes from its checkpoint (no step lost) and ends
with the same weights, byte for byte, as the urgent run (the same training, never preempted). Both runs train the
same data version with the same config, on purpose, so both carry ``mlassets/again`` (a deliberate retrain):
without it the pipeline's one-candidate guard would rightly stop the second of them."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.storage.tags import REPOSITORY_LABEL_TAG

from mlassets.cli import daemon
from mlassets.core import paths
from mlassets.core.config import CONFIGS_ENV, PipelineConfig, load_config
from mlassets.core.fleet.config import SHIPPED, load_fleet
from mlassets.core.fleet.spec import JobSpec
from mlassets.core.registry.made import AGAIN_TAG
from mlassets.defs.alerts import alerts_log
from mlassets.defs.fleet.runs import PREEMPTED_TAG, RESUME_TAG
from mlassets.examples.sales import write_example
from mlassets.host.code_server import LOCATION
from mlassets.host.instance import get_instance
from mlassets.host.run_origin import job_origin
from mlassets.host.runs import REPOSITORY, ingest
from tests.daemon_wait import until

pytestmark = pytest.mark.e2e
DEADLINE_S = 600  # a limit for a slow machine, not an expectation: each wait returns as soon as it is met
JOB, TRAINING = "sales_pipeline", "sales__candidate_model"


def slow_sales(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, epochs: int) -> Path:
    """The sales example on one `gpu` slot, training slowly (about 7 s an epoch) with a checkpoint every 5 steps."""
    config_path = write_example(tmp_path / "sales", months=1)
    data = yaml.safe_load(config_path.read_text())
    data["automation"] = {"sensor_interval_s": 1, "gpu_slots": 1, "on_new_data": False}
    data["training"].update({"epochs": epochs, "batch_size": 16, "checkpoint_every_steps": 5,
                             "faults": {"slow_loader_ms": 300}})
    config_path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv(CONFIGS_ENV, str(config_path))
    return config_path


@pytest.fixture
def cfg(home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PipelineConfig:
    return load_config(slow_sales(tmp_path, monkeypatch, epochs=4))  # about 30 s of training


def _submit(instance: dg.DagsterInstance, version: str, spec: JobSpec) -> str:
    """Queue a pipeline run of the code location with ``spec`` (as the UI's launch button does)."""
    recon = ReconstructableRepository.for_module("mlassets.definitions", "defs").get_reconstructable_job(JOB)
    run = instance.create_run_for_job(
        job_def=recon.get_definition(), run_config={}, job_code_origin=recon.get_python_origin(),
        remote_job_origin=job_origin(LOCATION, REPOSITORY, JOB),
        tags={"dagster/partition": version, REPOSITORY_LABEL_TAG: f"{REPOSITORY}@{LOCATION}", AGAIN_TAG: "test",
              **spec.tags(load_fleet(SHIPPED))})
    instance.submit_run(run.run_id, workspace=None)
    return run.run_id


def _spec(team: str, priority: str, preemptible: bool) -> JobSpec:
    return JobSpec(team=team, priority=priority, ranks=1, gpus_per_rank=1, expected_minutes=30.0,
                   capacity="spot-first", preemptible=preemptible, checkpoint_every_minutes=0.0)


def _step_started(instance: dg.DagsterInstance, run_id: str) -> bool:
    return any(e.dagster_event is not None and e.dagster_event.event_type_value == "STEP_START"
               and e.step_key == TRAINING for e in instance.all_logs(run_id))


def _checkpoints(run_id: str) -> list[Path]:
    return sorted(paths.home().glob(f"work/sales/train/*/{run_id[:8]}/checkpoints/step-*"))


def _meta(instance: dg.DagsterInstance, run_id: str, key: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
        mat = e.dagster_event.event_specific_data.materialization
        if mat.asset_key.to_user_string() == key:
            out = {k: v.value for k, v in mat.metadata.items()}
    return out


def _status(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRunStatus:
    return instance.get_run_by_id(run_id).status


def test_an_urgent_run_preempts_a_batch_run_which_resumes_to_the_same_weights(cfg, tmp_path) -> None:
    instance = get_instance()
    version = ingest(instance, cfg, "2024-01").key
    log = tmp_path / "daemon.log"
    with log.open("w") as out:
        proc = daemon.start(out)
    try:
        batch = _submit(instance, version, _spec("research", "batch", True))
        until("the batch run's first checkpoint", lambda: bool(_checkpoints(batch)), proc, log, DEADLINE_S)
        urgent = _submit(instance, version, _spec("product", "urgent", False))
        until("the batch run preempted", lambda: _status(instance, batch) == dg.DagsterRunStatus.CANCELED, proc,
              log, DEADLINE_S)
        requeued: list[dg.DagsterRun] = []

        def resumed_done() -> bool:
            requeued[:] = instance.get_runs(dg.RunsFilter(tags={RESUME_TAG: batch}))
            return bool(requeued) and requeued[0].status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)

        until("the requeued run to finish", resumed_done, proc, log, DEADLINE_S)
        until("the urgent run to finish", lambda: _status(instance, urgent) == dg.DagsterRunStatus.SUCCESS, proc,
              log, DEADLINE_S)
    finally:
        daemon.stop(proc)

    stopped = instance.get_run_by_id(batch)
    assert stopped.tags[PREEMPTED_TAG] == f"preempted for run {urgent[:8]} (urgent, team product)"
    (out_dir,) = paths.home().glob(f"work/sales/train/*/{batch[:8]}")  # the requeued run's too
    preempted_at = json.loads((out_dir / "preempted.json").read_text())["preempted_at_step"]
    assert requeued[0].status == dg.DagsterRunStatus.SUCCESS, log.read_text()[-3000:]
    assert requeued[0].tags["mlassets/fleet.team"] == "research" and requeued[0].tags["mlassets/trigger"] == "requeue"
    checkpoints = _meta(instance, requeued[0].run_id, "sales/checkpoints")
    assert checkpoints["resumed_from_step"] == preempted_at > 0  # no step lost
    resumed, alone = (_meta(instance, r, "sales/candidate_model") for r in (requeued[0].run_id, urgent))
    assert resumed["weights_sha256"] == alone["weights_sha256"]  # byte-identical to a run never preempted
    assert _meta(instance, urgent, "sales/checkpoints")["resumed_from_step"] in (None, 0)
    alerts = Path(alerts_log())
    assert not alerts.exists() or batch not in alerts.read_text()  # preempted is not failed: no alert
