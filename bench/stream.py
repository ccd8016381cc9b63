"""Streamed training input: samples per second of the training loop reading a window of row groups at a time
(``training.loader: stream``) ÷ the same loop over in-memory tensors, same data, model and batches, alternated."""

from __future__ import annotations

import io
import statistics
import tempfile
from pathlib import Path

from bench.registry import Result, benchmark
from mlassets.core.train.job import TrainJob
from mlassets.core.train.process import run_training
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.synthetic import tiny_config, write_splits

ROWS, GROUP, PAIRS = 400_000, 32_768, 3
MODEL = {"hidden": [256, 128], "embedding_dim": 8}
TRAINING = {"epochs": 1, "batch_size": 1024, "checkpoint_every_steps": 0, "telemetry_every_steps": 0}


def _loop_seconds(root: Path, data: tuple[Path, Path], name: str, **training: object) -> float:
    job = TrainJob(tiny_config(model=MODEL, **{**TRAINING, **training}), str(data[0]), str(data[1]),
                   str(root / name), "bench")
    return run_training(job, PrintReporter(stream=io.StringIO())).loop_seconds


@benchmark("stream_loader", goal="training samples/s, streamed row groups / in-memory tensors", better="higher",
           target=0.95)
def stream_loader() -> Result:
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        root = Path(tmp)
        data = write_splits(root / "data", ROWS, 4096, row_group_rows=GROUP)
        ratios = []
        for i in range(PAIRS):
            memory = _loop_seconds(root, data, f"memory{i}")
            stream = _loop_seconds(root, data, f"stream{i}", loader="stream")
            ratios.append(memory / stream)
    return Result(statistics.median(ratios), "x", f"{ROWS} rows in row groups of {GROUP}, window 262144 rows, batch "
                  f"1024, hidden {MODEL['hidden']}: median of {PAIRS} alternated pairs "
                  f"[{', '.join(f'{r:.3f}' for r in ratios)}]; last: memory {memory:.2f} s vs stream {stream:.2f} s")
