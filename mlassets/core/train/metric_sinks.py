"""Metrics from inside the training process: one sink per backend, and only rank 0 gets a real one.

The MLflow sink logs into the orchestrator's MLflow run (its id arrives in the Pipes extras) from a
background thread, in batches every ``flush_s`` seconds, so MLflow's work never blocks a training step.
Importing MLflow and opening its store costs ~2 s of CPU: a run that ends before its first flush leaves
its metrics in ``handoff`` instead, and the launching step (which has MLflow loaded) replays them.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

RUN_ID = "mlflow_run_id"
TRACKING_URI = "mlflow_tracking_uri"
HANDOFF = "metrics.jsonl"  # beside the run's outputs
Point = tuple[dict[str, float], int, int]  # metrics, step, timestamp (ms)


class MetricsSink(Protocol):
    def log(self, metrics: Mapping[str, float], step: int) -> None: ...

    def close(self) -> None: ...


class NullSink:
    """For ranks other than 0, and for runs without a tracking run."""

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        return None

    def close(self) -> None:
        return None


def _log_batch(client: Any, run_id: str, points: list[Point]) -> None:
    from mlflow.entities import Metric

    metrics = [Metric(k, v, stamp, step) for values, step, stamp in points for k, v in values.items()]
    for start in range(0, len(metrics), 1000):  # MLflow's limit per batch
        client.log_batch(run_id, metrics=metrics[start:start + 1000])


class MlflowSink:
    """Queues metrics; a daemon thread writes them to MLflow in batches (or hands a short run's off)."""

    def __init__(self, tracking_uri: str, run_id: str, handoff: Path | None = None, flush_s: float = 10.0) -> None:
        self.tracking_uri, self.run_id, self.handoff, self.flush_s = tracking_uri, run_id, handoff, flush_s
        self.errors: list[str] = []
        self._queue: queue.Queue[Point | None] = queue.Queue()
        self._client: Any = None
        self._thread = threading.Thread(target=self._work, name="mlflow-metrics", daemon=True)
        self._thread.start()

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        finite = {k: float(v) for k, v in metrics.items() if v == v}  # NaN is dropped, not logged
        if finite:
            self._queue.put((finite, int(step), int(time.time() * 1000)))

    def close(self, timeout_s: float = 60.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout_s)

    def _work(self) -> None:
        pending: list[Point] = []
        last = time.monotonic()
        while True:
            try:
                item = self._queue.get(timeout=self.flush_s)
            except queue.Empty:
                item = ()
            if item:
                pending.append(item)
            if item is None and self._client is None and self.handoff is not None:
                with self.handoff.open("a") as fh:  # a short run: the launching step logs these
                    fh.writelines(json.dumps(point) + "\n" for point in pending)
                return
            if pending and (item is None or time.monotonic() - last >= self.flush_s):
                self._write(pending)
                pending, last = [], time.monotonic()
            if item is None:
                return

    def _write(self, points: list[Point]) -> None:
        try:
            if self._client is None:
                from mlflow import MlflowClient

                self._client = MlflowClient(self.tracking_uri)
            _log_batch(self._client, self.run_id, points)
        except Exception as exc:  # noqa: BLE001 - metrics are best effort; training must go on
            self.errors.append(f"mlflow: {exc}")


def open_sink(extras: Mapping[str, object], rank: int, out_dir: Path | None = None) -> MetricsSink:
    """An MLflow sink on rank 0 when the extras name a run, a null sink otherwise."""
    run_id, uri = extras.get(RUN_ID), extras.get(TRACKING_URI)
    if rank != 0 or not run_id or not uri:
        return NullSink()
    return MlflowSink(str(uri), str(run_id), handoff=None if out_dir is None else out_dir / HANDOFF)


def replay(out_dir: Path, run_id: str) -> int:
    """Log the metrics a short run handed off (see ``MlflowSink``) into ``run_id``; returns how many points."""
    path = out_dir / HANDOFF
    if not path.is_file():
        return 0
    from mlflow import MlflowClient

    points = [tuple(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    _log_batch(MlflowClient(), run_id, points)  # type: ignore[arg-type]
    path.unlink()
    return len(points)
