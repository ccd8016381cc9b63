"""Small slices judged: a column's values under ``gate.slice_min_rows`` are pooled into one slice (when they reach
``POOL_MIN_ROWS`` rows together), and every slice interval is Bonferroni-corrected for the number of slices judged,
so that a regression spread over many small values is caught and many slices do not reject a healthy model by chance.

The Texas-housing-like table (tests/housing.py, its config with no dataset or gate key) gives the setting of the
issue: 46 cities with a handful of holdout rows each, prices rising through every version.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import load_config
from mlassets.core.evaluate.gate import evaluate_gate
from mlassets.core.evaluate.scored import evaluate_models
from mlassets.core.evaluate.slice_sums import POOL_MIN_ROWS
from tests.core.evaluate.test_gate import CFG, judge, pipeline
from tests.housing import CITIES, housing_table, write_housing

WORSE = CITIES[::4]  # 12 of the 46 cities


@pytest.fixture(scope="module")
def housing(tmp_path_factory: pytest.TempPathFactory):
    cfg = load_config(write_housing(tmp_path_factory.mktemp("housing"), [2008, *range(2009, 2016)]))
    assert cfg.gate.slice_min_rows == 200 and cfg.dataset.slices == ["city"]  # the defaults: no gate key
    return cfg, housing_table()


def _holdout(table: pd.DataFrame, year: int) -> pd.DataFrame:
    """The version's time-split holdout: its last two months (``holdout_days: 62``), two rows per city."""
    rows = table[(table["year"] == year) & (table["month"] >= 11)]
    assert len(rows) == 2 * len(CITIES)
    return rows.reset_index(drop=True)


def _predictions(rows: pd.DataFrame, seed: int, worse: float = 1.0, retrained: float = 0.0) -> np.ndarray:
    """A model off by 5% of the price (lognormal), ``worse`` times that on the cities of ``WORSE``; ``retrained``:
    the champion's errors (seed 0) at 90%, plus this much independent error of its own."""
    base = np.random.default_rng(0).normal(0.0, 0.05, len(rows))
    own = np.random.default_rng(seed).normal(0.0, 0.05, len(rows))
    log_error = 0.9 * base + retrained * own if retrained else own * np.where(rows["city"].isin(WORSE), worse, 1.0)
    return rows["median"].to_numpy() * np.exp(log_error)


@pytest.mark.parametrize("year", [2009, 2012, 2014])
def test_a_regression_spread_over_small_cities_is_rejected_a_healthy_model_promoted(housing, year) -> None:
    cfg, table = housing
    rows = _holdout(table, year)
    y, champion = rows["median"].to_numpy(), _predictions(rows, seed=0)
    worse = evaluate_gate(cfg.gate, evaluate_models(rows, y, _predictions(rows, year, worse=4.0), champion, cfg))
    assert not worse.passed  # every city is small here: the pool is the whole holdout, judged with its interval
    failed = {r.name: r for r in worse.failures()}
    pool = failed["slice city=(46 values under 200 rows, pooled)"]
    assert "92 rows" in pool.reason and "interval [+" in pool.reason
    assert worse.unjudged == []  # every city is judged, together

    healthy = [evaluate_gate(cfg.gate, evaluate_models(rows, y, _predictions(rows, seed, retrained=0.02), champion,
                                                       cfg)) for seed in range(100, 110)]
    assert all(g.passed for g in healthy)  # a retrained model a little better than the champion: promoted
    assert all("slice city=(46 values under 200 rows, pooled)" in [r.name for r in g.rules] for g in healthy)


def _carriers(sizes: dict[str, int], small_factor: float, seed: int = 0):
    """A champion off by N(0, 10); a candidate 4% better on the carriers of 200 rows or more and ``small_factor``
    times the champion's error on the others."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"carrier": np.concatenate([np.full(n, c) for c, n in sizes.items()])})
    y = rng.normal(100.0, 30.0, len(frame))
    err = rng.normal(0.0, 10.0, len(frame))
    large = frame["carrier"].map(sizes).to_numpy() >= 200
    return frame, y, y + np.where(large, 0.96, small_factor) * err, y + err


def test_a_regression_on_a_group_of_small_values_beside_large_ones_is_caught_by_the_pool() -> None:
    sizes = {"AA": 4000, "DL": 4000, **{f"S{i:02d}": 12 for i in range(40)}}  # 40 carriers of 12 rows: 480 rows
    frame, y, cand, champ = _carriers(sizes, small_factor=1.5)
    result = judge(CFG, y, cand, champ, frame, ["carrier"])
    assert [r.name for r in result.failures()] == ["slice carrier=(40 values under 200 rows, pooled)"]
    assert "480 rows" in result.failures()[0].reason and "(Bonferroni: 95% over 3 slices)" in result.reasons()[0]
    assert result.unjudged == []
    frame, y, cand, champ = _carriers(sizes, small_factor=1.0)  # as good as the champion on them: promoted
    assert judge(CFG, y, cand, champ, frame, ["carrier"]).passed


def test_too_few_rows_even_pooled_stay_unjudged() -> None:
    frame, y, cand, champ = _carriers({"AA": 3000, "B1": 8, "B2": 8, "B3": 8}, small_factor=3.0)  # 24 rows together
    result = judge(CFG, y, cand, champ, frame, ["carrier"])
    assert 24 < POOL_MIN_ROWS and result.passed
    assert [u.value for u in result.unjudged] == ["B1", "B2", "B3"]
    assert not any("pooled" in r.name for r in result.rules)


def test_many_slices_do_not_reject_a_healthy_model_by_chance() -> None:
    """30 slices of 250 rows, a candidate exactly as good as the champion (its own errors), 40 seeds: uncorrected, a
    slice's 95% interval misses on 1 in 40 sides, and 27 of these 40 evaluations were rejected; Bonferroni keeps
    the chance of any false rejection near its 5% (the percentile bootstrap's far tails, from 1000 resamples, a
    little above it: 5 of 40 here)."""
    rejected = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        frame = pd.DataFrame({"carrier": np.repeat([f"C{i:02d}" for i in range(30)], 250)})
        y = rng.normal(100.0, 30.0, len(frame))
        champ, cand = (y + rng.normal(0.0, 10.0, len(frame)) for _ in range(2))
        gate = dataclasses.replace(CFG, tolerance=1.0)  # the slices alone judge
        evaluation = evaluate_models(frame, y, cand, champ, pipeline(gate, ["carrier"], seed))
        assert evaluation.slice_confidence == pytest.approx(1 - 0.05 / 30)
        result = evaluate_gate(gate, evaluation)
        rejected += not result.passed
        assert all(r.name.startswith("slice") for r in result.failures())
    assert rejected <= 6, rejected


def test_a_pooled_record_reads_back_and_old_records_keep_their_level(tmp_path: Path) -> None:
    from mlassets.core.evaluate.record import Evaluation

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"carrier": np.repeat(["A", "B", "C", "D"], [400, 20, 20, 20])})
    y = rng.normal(10.0, 30.0, len(frame))
    champ = y + rng.normal(0.0, 10.0, len(frame))
    evaluation = evaluate_models(frame, y, champ + 1.0, champ, pipeline(CFG, ["carrier"]))
    pooled = evaluation.slices[-1]
    assert (pooled.value, pooled.n, pooled.pooled) == ("(3 values under 200 rows, pooled)", 60, 3)
    assert Evaluation.from_json(evaluation.to_json()) == evaluation
    old = evaluation.to_dict()
    old.pop("slice_confidence")
    for row in old["slices"]:
        row.pop("pooled")
    assert Evaluation.from_dict(old).slice_confidence is None  # a record from before: its intervals at confidence
