"""Checkpoints: manifest checks, safe loading, retention, and exact resume of one rank (in-process)."""

from __future__ import annotations

import io
import os
import pickle
import shutil
import time
from pathlib import Path

import pytest
import torch
import torch.distributed.checkpoint as dcp

from mlassets.core.train.checkpoint.files import verify, write_manifest
from mlassets.core.train.checkpoint.manager import Checkpointer, load_tensors, read_metadata, step_dirs
from mlassets.core.train.faults import InjectedCrash
from mlassets.core.train.job import TrainJob
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.core.train.torch_run.distributed import DistEnv
from mlassets.core.train.torch_run.process import run_training

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
ONE_RANK = DistEnv(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"), backend="none")
# 1000 rows at batch 128: 8 steps per epoch, 16 in all; checkpoints after steps 4, 8 (epoch end), 12, 16
TRAINING = {"epochs": 2, "checkpoint_every_steps": 4, "keep_last": 2, "lr_schedule": "cosine"}


def _save_plain(directory: Path, state: dict) -> None:
    dcp.save(state, checkpoint_id=directory, no_dist=True)
    write_manifest(directory, step=1)


def test_manifest_detects_truncated_changed_and_unlisted_files(tmp_path: Path) -> None:
    _save_plain(tmp_path / "c", {"model": {"w": torch.arange(1000.0)}})
    verify(tmp_path / "c")
    (data,) = (p for p in (tmp_path / "c").iterdir() if p.suffix == ".distcp")
    blob = data.read_bytes()
    data.write_bytes(blob[:-10])
    with pytest.raises(ValueError, match="truncated or corrupted"):
        verify(tmp_path / "c")
    data.write_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))  # same size, one bit flipped
    with pytest.raises(ValueError, match="truncated or corrupted"):
        verify(tmp_path / "c")
    data.write_bytes(blob)
    (tmp_path / "c" / "extra.distcp").write_bytes(b"x")
    with pytest.raises(ValueError, match="unlisted"):
        verify(tmp_path / "c")
    (tmp_path / "c" / "MANIFEST.json").unlink()
    with pytest.raises(ValueError, match="MANIFEST.json missing"):
        verify(tmp_path / "c")


def test_non_tensor_entry_is_refused_before_anything_is_loaded(tmp_path: Path) -> None:
    _save_plain(tmp_path / "c", {"model": {"w": torch.ones(3)}, "note": {"owner": "someone"}})
    verify(tmp_path / "c")  # a valid manifest does not make it acceptable
    target = {"model": {"w": torch.zeros(3)}}
    with pytest.raises(ValueError, match="non-tensor entries refused.*note.owner"):
        load_tensors(tmp_path / "c", target)
    assert torch.equal(target["model"]["w"], torch.zeros(3))


class _Exploit:
    def __reduce__(self):  # what a malicious pickle does: call something on load
        return (os.mkdir, (self.path,))


def test_metadata_with_foreign_objects_is_not_unpickled(tmp_path: Path) -> None:
    exploit = _Exploit()
    exploit.path = str(tmp_path / "pwned")
    (tmp_path / ".metadata").write_bytes(pickle.dumps(exploit))
    with pytest.raises(ValueError, match="posix.mkdir: refused"):
        read_metadata(tmp_path / ".metadata")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("use_async", [True, False])
def test_retention_keeps_the_last_k_and_the_best(tmp_path: Path, use_async: bool) -> None:
    ckpt = Checkpointer(tmp_path, ONE_RANK, keep_last=2, use_async=use_async, log=print)
    weights = torch.zeros(4)
    for step, val in enumerate([3.0, 1.0, 2.0, None, None], 1):
        weights += 1
        ckpt.save(step, {"model": {"w": weights}}, {"rank": 0}, {"step": step, "epoch": 1, "val_metric": val})
        ckpt.wait_staged()  # as the loop does before the optimizer changes the weights
    ckpt.wait()
    ckpt.close()
    assert [p.name for p in step_dirs(tmp_path)] == ["step-000000005", "step-000000004", "step-000000002"]
    loaded = {"model": {"w": torch.zeros(4)}}
    load_tensors(tmp_path / "step-000000002", loaded)
    assert torch.equal(loaded["model"]["w"], torch.full((4,), 2.0))


def test_a_save_that_waits_for_the_previous_write_says_so_once(tmp_path: Path, monkeypatch) -> None:
    slow_save = dcp.save

    def save(*args: object, **kwargs: object) -> object:
        time.sleep(0.3)  # a disk slower than the checkpoint cadence
        return slow_save(*args, **kwargs)

    monkeypatch.setattr(dcp, "save", save)
    lines: list[str] = []
    ckpt = Checkpointer(tmp_path, ONE_RANK, keep_last=5, use_async=True, log=lines.append)
    for step in (1, 2, 3):
        ckpt.save(step, {"model": {"w": torch.full((4,), float(step))}}, {"rank": 0},
                  {"step": step, "epoch": 1, "val_metric": None})
        ckpt.wait_staged()
    ckpt.wait()
    ckpt.close()
    waits = [line for line in lines if "waited" in line]
    assert len(waits) == 1 and waits[0].startswith("checkpoint at step 2 waited 0.")
    assert "checkpoint less often" in waits[0]
    assert [p.name for p in step_dirs(tmp_path)] == ["step-000000003", "step-000000002", "step-000000001"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_splits(tmp_path_factory.mktemp("data"), 1000, 300)


def _train(data: tuple[Path, Path], out: Path, log: io.StringIO | None = None, **faults: int) -> dict:
    job = TrainJob(tiny_config(**TRAINING, faults=faults), str(data[0]), str(data[1]), str(out), "v1")
    return run_training(job, PrintReporter(stream=log or io.StringIO()))


@pytest.fixture(scope="module")
def reference(data: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _train(data, tmp_path_factory.mktemp("reference"))


def test_crashes_at_three_steps_resume_to_identical_weights(data, reference, tmp_path: Path) -> None:
    out = tmp_path / "run"
    for step in (6, 12, 15):  # 12 is a checkpoint step: the crash comes while its async save is in flight
        with pytest.raises(InjectedCrash, match=f"at step {step}"):
            _train(data, out, crash_at_step=step)
        if step == 12:
            assert (out / "checkpoints" / ".tmp-step-000000012").is_dir()
            assert not (out / "checkpoints" / "step-000000012").exists()
    log = io.StringIO()
    result = _train(data, out, log)
    assert "resumed from checkpoint step-0000000" in log.getvalue()
    assert result.resumed_from_step in (8, 12) and result.attempt == 4
    assert result.final_weights_sha256 == reference.final_weights_sha256
    assert result.weights_sha256 == reference.weights_sha256
    assert result.curves == reference.curves


def test_corrupted_newest_checkpoint_falls_back_to_the_previous_one(data, reference, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(Path(reference.final_checkpoint).parent.parent, out)
    newest = step_dirs(out / "checkpoints")[0]
    assert newest.name == "step-000000016"
    shard = next(p for p in newest.iterdir() if p.suffix == ".distcp")
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])  # truncated
    log = io.StringIO()
    result = _train(data, out, log)
    assert "checkpoint step-000000016 is not valid (__0_0.distcp does not match" in log.getvalue()
    assert "falling back to the previous one" in log.getvalue()
    assert result.resumed_from_step == 12
    assert result.final_weights_sha256 == reference.final_weights_sha256


def test_time_based_checkpoints_and_invalid_cadence(data, tmp_path: Path) -> None:
    job = TrainJob(tiny_config(epochs=1, checkpoint_every_minutes=1e-6, keep_last=20), str(data[0]), str(data[1]),
                   str(tmp_path / "run"), "v1")
    result = run_training(job, PrintReporter(stream=io.StringIO()))
    assert [c["step"] for c in result.checkpoints] == list(range(1, 9))  # every step is "late"
    with pytest.raises(ValueError, match="training.checkpoint_every_steps: must be >= 0"):
        tiny_config(checkpoint_every_steps=-1)  # refused when the config is read, before any data
