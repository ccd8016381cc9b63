"""Streamed training input: samples per second of the training loop reading a window of row groups at a time
(``training.loader: stream``) ÷ the same loader with the whole split as its one window, decoded once (``memory``),
same data, model and batches, in pairs until the interval on their ratio decides (``bench.interval``). Each run must
train on every row (``bench.checks``)."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from bench.checks import expect_trained
from bench.interval import decide
from bench.registry import Result, benchmark, toy
from mlassets.core.train.job import TrainJob
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.core.train.torch_run.process import run_training

ROWS, GROUP, WINDOW = 400_000, 32_768, 262_144
TARGET, MIN_PAIRS, MAX_PAIRS = 0.95, 3, 8
MODEL = {"hidden": [256, 128], "embedding_dim": 8}
TRAINING = {"epochs": 1, "batch_size": 1024, "checkpoint_every_steps": 0, "telemetry_every_steps": 0}


def _loop_seconds(root: Path, data: tuple[Path, Path], name: str, rows: int, **training: object) -> float:
    job = TrainJob(tiny_config(model=MODEL, **{**TRAINING, **training}), str(data[0]), str(data[1]),
                   str(root / name), "bench")
    result = run_training(job, PrintReporter(stream=io.StringIO()))
    expect_trained(result, rows, f"training with loader {training.get('loader', 'memory')}")
    return result.loop_seconds


@benchmark("stream_loader", goal="training samples/s, windows of row groups / the whole split as one window",
           better="higher", target=TARGET)
def stream_loader() -> Result:
    seconds: list[tuple[float, float]] = []
    rows, group, window = toy(ROWS, 6_000), toy(GROUP, 1_000), toy(WINDOW, 2_000)  # toy: several windows too
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        root = Path(tmp)
        data = write_splits(root / "data", rows, toy(4096, 500), row_group_rows=group)

        def pair(i: int) -> float:
            seconds.append((_loop_seconds(root, data, f"memory{i}", rows),
                            _loop_seconds(root, data, f"stream{i}", rows, loader="stream",
                                          stream_window_rows=window)))
            return seconds[-1][0] / seconds[-1][1]

        interval = decide(pair, TARGET, "higher", MIN_PAIRS, MAX_PAIRS)
    memory, stream = seconds[-1]
    return Result(interval.estimate, "x", f"{rows} rows in row groups of {group}, window {window} rows, batch 1024, "
                  f"hidden {MODEL['hidden']}: pairs [{', '.join(f'{r:.3f}' for r in interval.ratios)}]; last: memory "
                  f"{memory:.2f} s vs stream {stream:.2f} s", interval=interval)
