"""How a training process ended, as its launcher reads it: one record per end, the first failing rank's cause kept,
an earlier attempt's end cleared before the next one starts (all but the step it was preempted at)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlassets.core.train.outcome import Outcome, clear_outcome, read_outcome, record_outcome
from mlassets.core.train.result import Environment, TrainingResult


def _result() -> TrainingResult:
    env = Environment(torch_version="2.13.0", cpu_capability="AVX2", cpu_model="cpu", blas="openblas", threads=1,
                      world_size=2)
    return TrainingResult(
        data_version="v1", task="regression", seed=0, environment=env, backend="gloo", device="cpu",
        sharding="ddp", precision="fp32", n_train=10, n_val=5, curves=[{"epoch": 1, "val_metric": 1.5}], best_epoch=1,
        val_metric=1.5, val_metric_name="mae", steps=8, attempt=2, resumed_from_step=4, train_seconds=1.0,
        loop_seconds=0.5, validation_seconds=0.1, weights_sha256="a" * 64, final_weights_sha256="b" * 64,
        model_dir="model", checkpoints=[], final_checkpoint=None, best_checkpoint=None, telemetry_dir="telemetry")


def test_nothing_recorded_reads_as_none(tmp_path: Path) -> None:
    assert read_outcome(tmp_path) is None


def test_the_first_failing_rank_names_the_cause_and_bad_input_is_not_retried(tmp_path: Path) -> None:
    record_outcome(tmp_path / "out", Outcome.failed(ValueError("model.family: 'forest' is not a family\nmore")))
    record_outcome(tmp_path / "out", Outcome.failed(RuntimeError("rank 1: peer closed")))  # because rank 0 failed
    ended = read_outcome(tmp_path / "out")
    assert ended == Outcome("failed", "training failed: ValueError: model.family: 'forest' is not a family",
                            retry=False)
    other = tmp_path / "other"
    record_outcome(other, Outcome.failed(RuntimeError("")))
    assert read_outcome(other) == Outcome("failed", "training failed: RuntimeError: RuntimeError('')", retry=True)


def test_a_refusal_stands_over_the_failure_it_raised_on_its_way_out(tmp_path: Path) -> None:
    record_outcome(tmp_path, Outcome("refused", "training.epochs: over training.budget_hours"))
    record_outcome(tmp_path, Outcome.failed(ValueError("over budget")))
    assert read_outcome(tmp_path) == Outcome("refused", "training.epochs: over training.budget_hours")


def test_a_new_attempt_clears_the_last_end_but_keeps_the_step_it_resumes_from(tmp_path: Path) -> None:
    record_outcome(tmp_path, Outcome.preempted(12))
    assert read_outcome(tmp_path) == Outcome.preempted(12) and read_outcome(tmp_path).step == 12
    clear_outcome(tmp_path)
    assert read_outcome(tmp_path) == Outcome.preempted(12)  # the requeued attempt resumes from step 12
    record_outcome(tmp_path, Outcome.failed(OSError("disk full")))
    assert read_outcome(tmp_path).ended == "failed"  # this attempt's own end, not the earlier preemption
    clear_outcome(tmp_path)
    assert read_outcome(tmp_path) == Outcome.preempted(12)


def test_a_trained_outcome_without_its_result_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs its result"):
        record_outcome(tmp_path, Outcome("trained"))
    assert read_outcome(tmp_path) is None


def test_a_run_that_trains_after_a_crashed_attempt_ends_trained(tmp_path: Path) -> None:
    record_outcome(tmp_path, Outcome.failed(RuntimeError("rank 1 was killed")))  # the first attempt, not cleared
    record_outcome(tmp_path, Outcome.preempted(4))
    result = _result()
    record_outcome(tmp_path, Outcome("trained", result=result))  # the attempt that resumed and finished
    assert read_outcome(tmp_path) == Outcome("trained", result=result)
