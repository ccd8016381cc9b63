"""Pairs repeated until the interval on their ratio decides, and the runner's verdict from the whole interval."""

from __future__ import annotations

import itertools

import pytest

from bench import registry
from bench.__main__ import main
from bench.checks import WorkFailed
from bench.interval import Interval, decide
from bench.registry import Result, benchmark


def _pairs(values: list[float]):
    seen: list[int] = []
    cycle = itertools.cycle(values)

    def pair(i: int) -> float:
        seen.append(i)
        return next(cycle)

    return pair, seen


def test_a_clear_ratio_is_decided_after_the_minimum_pairs() -> None:
    pair, seen = _pairs([2.0, 2.1, 1.9])
    interval = decide(pair, 3.0, "lower", min_pairs=3, max_pairs=10)
    assert seen == [0, 1, 2] and interval.verdict(3.0, "lower") == "met"
    assert interval.low < interval.estimate < interval.high < 3.0
    assert interval.estimate == pytest.approx((2.0 * 2.1 * 1.9) ** (1 / 3))
    assert interval.verdict(1.0, "lower") == "missed" and interval.verdict(1.5, "higher") == "met"
    assert interval.verdict(2.05, "higher") == "undecided"


def test_a_ratio_near_its_goal_is_repeated_up_to_the_bound() -> None:
    pair, seen = _pairs([2.9, 3.1])
    interval = decide(pair, 3.0, "lower", min_pairs=3, max_pairs=7)
    assert seen == list(range(7)) and interval.verdict(3.0, "lower") == "undecided"
    assert interval.low < 3.0 < interval.high and len(interval.ratios) == 7


def test_a_missed_goal_stops_early_and_says_so() -> None:
    pair, seen = _pairs([0.90, 0.91, 0.89])
    interval = decide(pair, 0.95, "higher", min_pairs=3, max_pairs=8)
    assert seen == [0, 1, 2] and interval.verdict(0.95, "higher") == "missed"


def test_failed_work_in_a_pair_is_not_a_ratio() -> None:
    with pytest.raises(WorkFailed, match="pair ratios: not a positive finite number"):
        decide(lambda i: [1.0, float("nan")][i], 3.0, "lower")

    def broken(i: int) -> float:
        raise WorkFailed("training rows: expected 400000, got 0")

    with pytest.raises(WorkFailed, match="training rows"):
        decide(broken, 3.0, "lower")


def test_runner_prints_the_interval_and_its_verdict(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(registry, "REGISTRY", {})
    intervals = {"clear": Interval.of([2.0, 2.1, 1.9]), "near": Interval.of([2.9, 3.1, 2.95, 3.05]),
                 "over": Interval.of([4.0, 4.1, 3.9])}
    for name, interval in intervals.items():
        benchmark(name, goal="ratio", better="lower", target=3)(
            lambda i=interval: Result(i.estimate, "x", "both sides in this run", interval=i))
    assert main([], modules=()) == 0
    rows = {line.split(" | ")[0].strip(): [c.strip() for c in line.split(" | ")] for line in
            capsys.readouterr().out.splitlines()[2:]}
    near = intervals["near"]
    assert rows["near"][1] == f"{near.estimate:.3g} x [{near.low:.3g}, {near.high:.3g}]"
    assert [rows[n][3] for n in intervals] == ["yes", "undecided", "NO"]
    assert rows["over"][4].startswith("missed: 95% CI [") and rows["over"][4].endswith(
        "over 3 pairs; both sides in this run")
