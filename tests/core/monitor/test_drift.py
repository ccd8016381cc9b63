"""Drift statistics on synthetic, seeded rows: what is flagged, why, and what is too small to judge."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import MonitoringConfig, load_config, shipped_configs
from mlassets.core.monitor.drift import (
    DriftReport,
    compare,
    drift_report,
    ks_target,
    no_champion,
    psi_categorical,
    psi_numeric,
)

CARRIERS = ["AA", "UA", "DL"]


@pytest.fixture(scope="module")
def cfg():
    base = load_config(shipped_configs()["flights"])
    feats = dataclasses.replace(base.features, categorical=["carrier", "origin"], numeric=["distance", "precip"])
    return dataclasses.replace(base, features=feats, monitoring=MonitoringConfig(drift_min_rows=200))


def rows(n: int, seed: int, distance_shift: float = 0.0, delay_shift: float = 0.0,
         carriers: tuple[str, ...] = tuple(CARRIERS), weights: tuple[float, ...] = (0.5, 0.3, 0.2)) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "carrier": rng.choice(list(carriers), n, p=list(weights)),
        "origin": rng.choice(["EWR", "JFK", "LGA"], n),
        "distance": rng.gamma(4.0, 250.0, n) + distance_shift,
        "precip": np.where(rng.random(n) < 0.9, 0.0, rng.exponential(0.1, n)),  # mostly zero: tied quantiles
        "arr_delay": rng.normal(5.0, 30.0, n) + delay_shift,
    })


def _row(report_rows, scope, feature):
    return next(r for r in report_rows if r.scope == scope and r.feature == feature)


def test_a_shifted_feature_is_flagged_with_its_reason_and_the_others_are_not(cfg):
    report = drift_report(rows(4000, 1), rows(3000, 2, distance_shift=400.0), cfg, data_version="b" * 40,
                          new_partitions=["2013-02"], champion_version="3", reference_data_version="a" * 40)
    distance = _row(report.rows, "all", "distance")
    assert distance.drifted and distance.value > 0.2 and distance.threshold == 0.2
    assert report.drifted
    assert report.reasons[0] == f"feature distance: PSI {distance.value:.2f} > 0.2 (all rows)"
    for feature in ("carrier", "origin", "precip", "arr_delay"):
        assert not _row(report.rows, "all", feature).drifted, feature
    assert all("distance" in reason for reason in report.reasons)  # overall and inside each slice value
    assert "feature distance: PSI" in report.reasons[-1] and "(slice " in report.reasons[-1]


def test_same_distribution_is_not_drifted(cfg):
    report = drift_report(rows(4000, 1), rows(3000, 2), cfg, data_version="b" * 40, new_partitions=["p"],
                          champion_version="1", reference_data_version="a" * 40)
    assert not report.drifted and report.reasons == []
    assert max(r.value for r in report.rows if r.statistic == "psi") < 0.05
    assert {r.scope for r in report.rows} == {"all", "slice origin=EWR", "slice origin=JFK", "slice origin=LGA",
                                              "slice carrier=AA", "slice carrier=UA", "slice carrier=DL"}


def test_small_slices_are_skipped_and_never_flagged(cfg):
    reference = rows(4000, 1, weights=(0.5, 0.48, 0.02))  # DL: ~80 reference rows
    new = rows(3000, 2, weights=(0.5, 0.3, 0.2))
    new.loc[new["carrier"] == "DL", "distance"] += 2000  # a big change, but in a slice too small to judge
    rows_, skipped = compare(reference, new, cfg)
    assert not [r for r in rows_ if r.scope == "slice carrier=DL"]
    dl = next(s for s in skipped if s.startswith("slice carrier=DL:"))
    assert "reference rows (fewer than 200)" in dl
    assert "slice carrier=AA" in {r.scope for r in rows_}


def test_a_shifted_target_fails_the_ks_test(cfg):
    report = drift_report(rows(4000, 1), rows(3000, 2, delay_shift=15.0), cfg, data_version="b" * 40,
                          new_partitions=["p"], champion_version="1", reference_data_version="a" * 40)
    target = _row(report.rows, "all", "arr_delay")
    assert target.statistic == "ks_pvalue" and target.value < 1e-6 and target.drifted
    assert f"target arr_delay: KS p-value {target.value:.2g} < 0.001 (all rows)" in report.reasons
    assert not _row(report.rows, "all", "distance").drifted


def test_ks_on_equal_samples_has_a_large_pvalue():
    rng = np.random.default_rng(7)
    _, p = ks_target(pd.Series(rng.normal(size=2000)), pd.Series(rng.normal(size=2000)))
    assert p > 0.01
    statistic, p = ks_target(pd.Series([np.nan, 1.0]), pd.Series([np.nan, np.nan]))
    assert np.isnan(p) and np.isnan(statistic)


def test_psi_numeric_bins_at_reference_quantiles_and_counts_missing_values():
    rng = np.random.default_rng(3)
    reference = rng.normal(size=5000)
    assert psi_numeric(reference, rng.normal(size=5000)) < 0.02
    assert psi_numeric(reference, rng.normal(loc=1.0, size=5000)) > 0.5
    with_missing = np.where(rng.random(5000) < 0.3, np.nan, rng.normal(size=5000))
    assert psi_numeric(reference, with_missing) > 0.5  # 30% of the rows moved into the missing bin


def test_unseen_categories_form_their_own_bin():
    reference = pd.Series(["a"] * 500 + ["b"] * 500)
    assert psi_categorical(reference, pd.Series(["a"] * 250 + ["b"] * 250)) == pytest.approx(0.0, abs=1e-12)
    unseen = psi_categorical(reference, pd.Series(["a"] * 250 + ["b"] * 150 + ["c"] * 50 + ["d"] * 50))
    assert unseen > 0.5  # 20% of the rows in a bin the reference never filled (epsilon share)
    assert psi_categorical(pd.Series([1.0, 2.0] * 100), pd.Series([1, 2] * 100)) == pytest.approx(0.0, abs=1e-12)


def test_no_champion_is_not_drifted_and_round_trips():
    report = no_champion("c" * 40, ["2013-01"], 1234)
    assert not report.drifted and report.champion_version is None and "no champion" in report.note
    assert DriftReport.from_json(report.to_json()) == report


def test_a_multiclass_target_is_compared_by_its_class_shares(cfg):
    """A multiclass target's labels have no distribution to KS-test: their shares are compared by PSI."""
    multi = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, task="multiclass", target="carrier"),
                                features=dataclasses.replace(cfg.features, categorical=["origin"]))
    same = drift_report(rows(4000, 1), rows(3000, 2), multi, data_version="b" * 40, new_partitions=["p"],
                        champion_version="1", reference_data_version="a" * 40)
    target = _row(same.rows, "all", "carrier")
    assert target.statistic == "psi" and target.value < 0.05 and not same.drifted
    shifted = drift_report(rows(4000, 1), rows(3000, 2, weights=(0.1, 0.2, 0.7)), multi, data_version="b" * 40,
                           new_partitions=["p"], champion_version="1", reference_data_version="a" * 40)
    target = _row(shifted.rows, "all", "carrier")
    assert target.drifted and target.threshold == 0.2
    assert shifted.reasons[0] == f"target carrier: PSI of the class shares {target.value:.2f} > 0.2 (all rows)"
