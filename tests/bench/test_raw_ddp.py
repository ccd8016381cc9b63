"""The raw DDP anchor of the scaling benchmark: 2 gloo ranks over a tiny job, and its crash when it cannot train."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import training
from bench.checks import WorkFailed

pytestmark = pytest.mark.e2e  # slow (processes, kills, memory): in `make test`, not `make test-fast`

TINY = {"model": {"hidden": [8], "embedding_dim": 2}, "training": {"epochs": 1, "batch_size": 64}}


def test_raw_ddp_loop_on_two_ranks_measures_every_step(tmp_path: Path) -> None:
    samples_per_s = training._throughput(TINY, 2, 64 * 6, tmp_path, raw=True)
    assert samples_per_s > 0
    report = (tmp_path / "raw-2-64.steps.json").read_text()
    assert '"world_size": 2' in report and '"rows": 384' in report


def test_raw_ddp_loop_that_cannot_read_its_data_crashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_job = training._job

    def unreadable(*args, **kwargs):
        job = make_job(*args, **kwargs)
        Path(job.train_path).write_bytes(b"not parquet")
        return job

    monkeypatch.setattr(training, "_job", unreadable)
    with pytest.raises(WorkFailed, match=r"raw DDP loop with 1 rank\(s\) exited [1-9]"):
        training._throughput(TINY, 1, 64 * 2, tmp_path, raw=True)
