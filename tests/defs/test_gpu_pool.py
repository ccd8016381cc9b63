"""Training steps run in the `gpu` concurrency pool: with one slot, three pipeline runs started at once never train
at the same time (read from the event log); with two slots, two runs at once both finish, with no sqlite lock
error from MLflow, the store or Dagster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from mlassets.core.config import PipelineConfig, load_config
from mlassets.examples.sales import write_example
from mlassets.host.instance import get_instance
from mlassets.host.runs import ingest

pytestmark = pytest.mark.e2e
TRAINING_STEP = "sales__candidate_model"


def _stack(tmp_path: Path, slots: int, months: int) -> tuple[PipelineConfig, Path, list[str]]:
    config = write_example(tmp_path / "sales", months=months)
    data = yaml.safe_load(config.read_text())
    data["automation"] = {"gpu_slots": slots}
    data["training"]["epochs"] = 3
    config.write_text(yaml.safe_dump(data))
    cfg = load_config(config)
    instance = get_instance()
    versions = [ingest(instance, cfg, key).key for key in cfg.dataset.partitions.keys[:months]]
    instance.dispose()
    return cfg, config, versions


def _run_all(config: Path, versions: list[str]) -> list[subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "-m", "mlassets.cli", "run", "--config", str(config), "--version", v],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for v in versions]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def _training_spans(instance: dg.DagsterInstance) -> tuple[list[tuple[float, float]], int]:
    spans, blocked = [], 0
    for run in instance.get_runs(dg.RunsFilter(job_name="sales_pipeline")):
        times = {}
        for entry in instance.all_logs(run.run_id):
            event = entry.dagster_event
            if event is None or entry.step_key != TRAINING_STEP:
                continue
            if event.event_type_value in ("STEP_START", "STEP_SUCCESS"):
                times[event.event_type_value] = entry.timestamp
            blocked += "blocked by limit for pool gpu" in (entry.message or "")
        spans.append((times["STEP_START"], times["STEP_SUCCESS"]))
    return sorted(spans), blocked


def test_one_gpu_slot_never_runs_two_trainings_at_once(home: str, tmp_path: Path) -> None:
    _, config, versions = _stack(tmp_path, slots=1, months=3)
    done = _run_all(config, versions)
    assert all(d.returncode in (0, 3) for d in done), [d.stderr[-6000:] for d in done if d.returncode]  # 3: rejected
    instance = get_instance()
    assert instance.event_log_storage.get_concurrency_info("gpu").slot_count == 1
    spans, blocked = _training_spans(instance)
    assert len(spans) == 3 and blocked >= 1  # the others queued for the slot ...
    pairs = zip(spans, spans[1:], strict=False)
    assert all(earlier[1] <= later[0] for earlier, later in pairs), spans  # ... one at a time


def test_two_trainings_at_once_share_the_embedded_stack_without_lock_errors(home: str, tmp_path: Path) -> None:
    _, config, versions = _stack(tmp_path, slots=2, months=2)
    done = _run_all(config, versions)
    assert all(d.returncode in (0, 3) for d in done), [d.stderr[-6000:] for d in done if d.returncode]  # 3: rejected
    assert not [d for d in done if "database is locked" in d.stdout + d.stderr]
    spans, blocked = _training_spans(get_instance())
    assert len(spans) == 2 and blocked == 0
