"""Decay of a champion's metric with age, and the retrain cadence recommended from it (synthetic series)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mlassets.core.config import load_config, shipped_configs
from mlassets.core.data.raw import raw_repo
from mlassets.core.data.store import open_store
from mlassets.core.monitor.decay import DecayReport, decay_report, point
from mlassets.core.monitor.history import Ages

TOLERANCE = 0.05


def series(model: str, base: float, ages: list[float], rate: float, noise: float = 0.0, seed: int = 0) -> list:
    """A model's own evaluation (age 0) and later ones whose metric grows by ``rate`` per day (plus noise)."""
    rng = np.random.default_rng(seed)
    out = [point(model, f"v{model}", f"v{model}", 0.0, base, base, TOLERANCE)]
    for age in ages:
        metric = base * (1 + rate * age + rng.normal(0.0, noise))
        out.append(point(model, f"v{model}", f"later{age}", age, metric, base, TOLERANCE))
    return out


def test_a_decaying_series_recommends_the_age_where_the_trend_crosses_the_tolerance():
    points = series("1", 20.0, [30, 60, 90], 0.001, noise=0.002, seed=1) + \
        series("2", 18.0, [31, 59], 0.001, noise=0.002, seed=2)
    report = decay_report(points, "mae", "days", TOLERANCE)
    assert report.slope == pytest.approx(0.001, rel=0.1)
    assert report.cadence == pytest.approx((TOLERANCE - report.intercept) / report.slope)
    assert 40 < report.cadence < 60  # 5% at 0.1% per day: about 50 days
    assert report.recommendation.startswith(f"retrain at least every {report.cadence:.1f}".removesuffix(".0"))
    assert "within 5% of its MAE" in report.recommendation and "extrapolated" not in report.recommendation
    by_model = {(p.model_version, p.age): p for p in report.points}
    assert by_model[("1", 90.0)].change == pytest.approx(0.09, abs=0.01) and not by_model[("1", 90.0)].within
    assert by_model[("1", 30.0)].within and by_model[("1", 0.0)].change == 0.0
    assert [p.model_version for p in report.points] == ["1"] * 4 + ["2"] * 3  # per model, by age


def test_a_slow_decay_is_extrapolated_beyond_the_oldest_point_and_says_so():
    report = decay_report(series("1", 20.0, [10, 20, 30], 0.0005), "mae", "days", TOLERANCE)
    assert report.cadence == pytest.approx(100.0)
    assert "extrapolated: the oldest point is 30 days" in report.recommendation


def test_no_decay_gives_no_cadence_from_the_trend():
    report = decay_report(series("1", 20.0, [30, 60, 90], -0.0002), "mae", "days", TOLERANCE)
    assert report.cadence is None and report.slope < 0
    assert report.recommendation.startswith("no decay seen") and "90 days" in report.recommendation


@pytest.mark.parametrize("ages", [[], [30, 60], [30, 30, 30]])
def test_too_few_later_points_say_not_enough_data(ages):
    report = decay_report(series("1", 20.0, ages, 0.001), "mae", "days", TOLERANCE)
    assert report.cadence is None and report.slope is None
    assert report.recommendation.startswith(f"not enough data: {len(ages)} evaluation(s)")


def test_versions_as_the_unit_and_the_record_round_trips():
    report = decay_report(series("4", 0.5, [1, 2, 3], 0.02), "logloss", "versions", TOLERANCE)
    assert report.cadence == pytest.approx(2.5)
    assert report.recommendation.startswith("retrain at least every 2 versions")  # whole versions, rounded down
    assert DecayReport.from_json(report.to_json()) == report


def test_without_a_time_column_age_counts_versions_on_the_watched_branch(tmp_path):
    base = load_config(shipped_configs()["flights"])
    cfg = dataclasses.replace(base, features=dataclasses.replace(base.features, split="hash"))
    store = open_store("local", root=str(tmp_path / "store"))
    repo = raw_repo(cfg)
    store.create_repo(repo, default_branch="main")
    commits = [store.commit(repo, "main", {f"raw/t/{i}.parquet": b"x"}, f"v{i}").id for i in range(3)]
    store.create_branch(repo, "side", commits[0])
    aside = store.commit(repo, "side", {"raw/t/s.parquet": b"y"}, "side").id
    ages = Ages(store, cfg)
    assert ages.unit == "versions"
    assert [ages(commits[0], c) for c in commits] == [0.0, 1.0, 2.0]
    assert ages(aside, commits[2]) is None  # not in the later version's history: no age


def test_a_higher_is_better_metric_decays_when_it_falls():
    """Accuracy falling from 0.9 to 0.81 is a 10% loss (a positive change); rising is no decay."""
    fell = point("1", "v1", "v2", 30.0, 0.81, 0.9, TOLERANCE, higher_is_better=True)
    assert fell.change == pytest.approx(0.1) and not fell.within
    rose = point("1", "v1", "v3", 60.0, 0.95, 0.9, TOLERANCE, higher_is_better=True)
    assert rose.change < 0 and rose.within
