"""Rank 0's metrics sink: live batches into the orchestrator's MLflow run, or a hand-off for short runs."""

from __future__ import annotations

import time
from pathlib import Path

import mlflow

from mlassets.core import tracking
from mlassets.core.train.metric_sinks import HANDOFF, MlflowSink, NullSink, open_sink, replay


def _history(run_id: str, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in mlflow.MlflowClient().get_metric_history(run_id, key)]


def test_only_rank_zero_with_a_run_gets_a_sink(home: str, tmp_path: Path) -> None:
    extras = {"mlflow_run_id": "r", "mlflow_tracking_uri": "sqlite:///x.db"}
    assert isinstance(open_sink(extras, rank=1), NullSink)
    assert isinstance(open_sink({}, rank=0), NullSink)


def test_a_long_run_logs_live_in_batches(home: str) -> None:
    tracking.configure()
    with mlflow.start_run() as run:
        sink = MlflowSink(mlflow.get_tracking_uri(), run.info.run_id, flush_s=0.05)
        sink.log({"telemetry/median_step_ms": 2.0, "nan_is_dropped": float("nan")}, step=50)
        time.sleep(0.5)  # past the flush interval: written while the run goes on
        assert _history(run.info.run_id, "telemetry/median_step_ms") == [(50, 2.0)]
        sink.log({"telemetry/median_step_ms": 3.0}, step=100)
        sink.close()
        assert _history(run.info.run_id, "telemetry/median_step_ms") == [(50, 2.0), (100, 3.0)]
        assert _history(run.info.run_id, "nan_is_dropped") == [] and not sink.errors


def test_a_short_run_hands_its_metrics_to_the_launching_step(home: str, tmp_path: Path) -> None:
    tracking.configure()
    with mlflow.start_run() as run:
        sink = MlflowSink(mlflow.get_tracking_uri(), run.info.run_id, handoff=tmp_path / HANDOFF, flush_s=60)
        sink.log({"val_mae": 12.5}, step=1)
        sink.close()  # before the first flush: MLflow was never imported by the sink
        assert sink._client is None and (tmp_path / HANDOFF).is_file()
        assert replay(tmp_path, run.info.run_id) == 1
        assert _history(run.info.run_id, "val_mae") == [(1, 12.5)] and not (tmp_path / HANDOFF).exists()
