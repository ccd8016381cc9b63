"""Per-rank summaries: warm-up rows, several attempts, interleaved ranks, the chart series, the benchmark frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.diagnose import page_logic, telemetry
from mlassets.core.diagnose.examples import straggler_input
from mlassets.core.diagnose.steps import over_steps, rank_summary, to_ms


def test_warmup_is_the_first_step_of_each_attempt_and_is_left_out() -> None:
    frame = straggler_input()
    frame.loc[frame.index[::100], "t_step"] = 5.0  # each rank's first step: 5 s of start-up
    frame.loc[frame.index[::100], "t_data_wait"] = 4.9
    summary = rank_summary(to_ms(frame))
    assert summary.loc[0, "t_step"] == pytest.approx(420.0) and summary.loc[0, "steps"] == 99  # waits for rank 3
    two = pd.concat([frame[frame["rank"] == 0], frame[frame["rank"] == 0].assign(attempt=2)], ignore_index=True)
    arrays = to_ms(two)
    assert arrays.warmup.sum() == 2 and rank_summary(arrays).loc[0, "steps"] == 198


def test_interleaved_ranks_are_grouped_and_give_the_same_summary() -> None:
    frame = straggler_input()
    shuffled = frame.sort_values(["step", "rank"], kind="stable").reset_index(drop=True)
    a, b = rank_summary(to_ms(frame)), rank_summary(to_ms(shuffled))
    pd.testing.assert_frame_equal(a, b)
    series = over_steps(to_ms(shuffled), points=10)
    assert len(series) == 8 * 10 and series.loc[series["rank"] == 3, "t_data_wait"].iloc[-1] == pytest.approx(250.0)


def test_large_runs_summarize_every_rank_and_find_the_slow_input() -> None:
    frame = telemetry(ranks=4, steps=30_000)
    summary = rank_summary(to_ms(frame))
    means = frame[frame["step"] > 1].groupby("rank")["t_data_wait"].mean() * 1000
    assert np.allclose(summary["t_data_wait"], means)
    assert page_logic(frame).startswith("straggler: rank") is False  # 4 ranks: rank 5 does not exist
    assert page_logic(telemetry(ranks=8, steps=2000)).startswith("straggler: rank 5, input path")
