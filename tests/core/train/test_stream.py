"""Streamed training input (``training.loader: stream``): every row once per epoch in a seeded order, never more than a
window of row groups in memory, one trajectory for 1 and 2 ranks, exact resume after a SIGKILL."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from mlassets.core.config import FaultConfig, parse_config
from mlassets.core.train.faults import Faults
from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import train_command
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.split_stream import scan
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.core.train.torch_run.global_batches import Batches
from mlassets.core.train.torch_run.loader import load_data
from mlassets.core.train.torch_run.process import run_training

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore:torch.distributed is disabled")]
REPO = Path(__file__).resolve().parents[3]
STREAM = {"loader": "stream", "stream_window_rows": 250, "epochs": 2, "checkpoint_every_steps": 4}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_splits(tmp_path_factory.mktemp("stream"), 1000, 300, row_group_rows=100)  # 10 row groups


def _job(data: tuple[Path, Path], out: Path, **training: object) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    return TrainJob(tiny_config(**{**STREAM, **training}), str(data[0]), str(data[1]), str(out), "v1").to_json(
        out / "job.json")


def _env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    return {**base, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def test_each_epoch_reads_every_row_once_a_window_at_a_time_in_a_seeded_order(data, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(**STREAM))
    streamed = scan(cfg, str(data[0]), str(data[1]), None)
    memory = load_data(cfg, str(data[0]), str(data[1]), None)
    assert streamed.n_train == memory.n_train == 1000 and streamed.n_val == memory.n_val
    assert streamed.center == pytest.approx(memory.center, rel=0.01)  # the median, from mergeable quantile summaries
    assert streamed.pre.vocab == memory.pre.vocab  # the same vocabularies from sets as from the whole frame
    assert streamed.pre.means == pytest.approx(memory.pre.means) and streamed.pre.stds == pytest.approx(memory.pre.stds)
    batches = Batches(streamed, Faults(FaultConfig(), 0, tmp_path), 128, 0, 1, seed=7, window_rows=250)
    windows = batches.windows()
    assert sorted(g for w in windows for g in w) == list(range(10)) and max(len(w) for w in windows) == 3
    epochs = []
    for epoch in (1, 2):
        batches.set_epoch(epoch)
        ys = torch.cat([y for *_, y in batches]).numpy()
        assert len(ys) == 1000 and batches.position == len(batches) == 8
        raw = np.sort(ys.astype(np.float64) * streamed.scale + streamed.center)  # back in target units
        assert np.allclose(raw, np.sort(memory.y.numpy() * memory.scale + memory.center), atol=1e-3)  # each row once
        epochs.append(ys)
    assert not np.array_equal(epochs[0], epochs[1])  # another order each epoch ...
    batches.set_epoch(2)
    assert np.array_equal(torch.cat([y for *_, y in batches]).numpy(), epochs[1])  # ... the same for the same seed
    batches.set_epoch(2)
    batches.load_state_dict({"epoch": 2, "position": 5, "seed": 7})  # a resumed position: the same rows from there
    assert np.array_equal(torch.cat([y for *_, y in batches]).numpy(), epochs[1][5 * 128:])


def test_two_ranks_follow_the_one_rank_trajectory_and_a_sigkill_resumes_exactly(data, tmp_path: Path) -> None:
    single = tmp_path / "single"
    result = run_training(TrainJob.from_json(_job(data, single)), PrintReporter(stream=io.StringIO()))
    two = tmp_path / "two"
    proc = subprocess.run(train_command(2, _job(data, two)), capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    one_w = torch.load(single / "final_weights.pt", weights_only=True)
    two_w = torch.load(two / "final_weights.pt", weights_only=True)
    for name in one_w:
        assert torch.allclose(one_w[name], two_w[name], rtol=1e-5), name

    killed = tmp_path / "killed"
    proc = subprocess.Popen(train_command(1, _job(data, killed, faults={"slow_loader_ms": 300})), env=_env(),
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = killed / "checkpoints" / "step-000000004"
    deadline = time.monotonic() + 120
    while not first.is_dir() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert first.is_dir() and not (killed / "result.json").exists()
    resumed = run_training(TrainJob.from_json(_job(data, killed)), PrintReporter(stream=io.StringIO()))
    assert resumed.resumed_from_step >= 4  # mid-epoch: the window of step 4's rows is read and shuffled again
    assert resumed.final_weights_sha256 == result.final_weights_sha256
    assert read_outcome(killed).result.weights_sha256 == result.weights_sha256


def test_the_in_memory_loader_is_the_one_window_case_decoded_once(data, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(**{**STREAM, "loader": "memory"}))
    scanned = scan(cfg, str(data[0]), str(data[1]), None)
    reads: list[list[int]] = []
    read_groups = scanned.read_groups
    scanned.read_groups = lambda groups: reads.append(list(groups)) or read_groups(groups)  # counts, then reads
    batches = Batches(scanned, Faults(FaultConfig(), 0, tmp_path), 128, 0, 1, seed=7, window_rows=0)
    assert batches.windows() == [list(range(10))]  # every row group, in file order
    epochs = []
    for epoch in (1, 2):
        batches.set_epoch(epoch)
        epochs.append(torch.cat([y for *_, y in batches]).numpy())
        assert np.array_equal(np.sort(epochs[-1]), np.sort(read_groups(list(range(10)))[2]))  # each row once
    assert reads == [list(range(10))]  # the whole split decoded once, kept for the second epoch
    assert not np.array_equal(epochs[0], epochs[1])
    batches.set_epoch(2)
    batches.load_state_dict({"epoch": 2, "position": 3, "seed": 7})
    assert np.array_equal(torch.cat([y for *_, y in batches]).numpy(), epochs[1][3 * 128:])
    halves = []
    for rank in (0, 1):  # two ranks: each its contiguous half of every global batch, together the one-rank batches
        two = Batches(scanned, Faults(FaultConfig(), rank, tmp_path), 128, rank, 2, seed=7, window_rows=0)
        two.set_epoch(2)
        halves.append([y.numpy() for *_, y in two])
    assert np.array_equal(np.concatenate([np.concatenate(pair) for pair in zip(*halves, strict=True)]), epochs[1])


def test_a_window_as_large_as_the_split_is_the_in_memory_loader(data, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(**STREAM))
    scanned = scan(cfg, str(data[0]), str(data[1]), None)
    faults = Faults(FaultConfig(), 0, tmp_path)
    whole, large = (Batches(scanned, faults, 100, 0, 1, seed=3, window_rows=rows) for rows in (0, 1000))
    assert np.array_equal(torch.cat([y for *_, y in whole]).numpy(), torch.cat([y for *_, y in large]).numpy())
