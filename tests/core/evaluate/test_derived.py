"""Defaults derived from the data where the config is silent: the first model against a naive baseline, the
sanity range from the training target, row bands from the partitions seen; each said in one line."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import DatasetConfig, GateConfig, load_config, shipped_configs
from mlassets.core.data.bands import row_band
from mlassets.core.data.partition_checks import validate_row_change, validate_target_mean, validate_target_quantiles
from mlassets.core.data.schema import min_rows_of, validate_min_rows
from mlassets.core.evaluate.derived import derive
from mlassets.core.evaluate.gate import evaluate_gate
from mlassets.core.evaluate.gate_rules import UnjudgedSlice, summarize_unjudged
from mlassets.core.evaluate.scored import evaluate_models

DERIVED = GateConfig(slice_min_rows=200)  # the platform's defaults: no absolute limit, no sanity range


def _cfg(gate: GateConfig = DERIVED, task: str = "regression"):
    """flights' config, its target without declared bounds (the tests' targets are prices as well as delays)."""
    flights = load_config(shipped_configs()["flights"])
    unbounded = dataclasses.replace(flights.dataset.columns["arr_delay"], min=None, max=None)
    return dataclasses.replace(flights, gate=gate, dataset=dataclasses.replace(
        flights.dataset, slices=[], task=task, columns={**flights.dataset.columns, "arr_delay": unbounded}))


def _first_model(train_y, holdout_y, predictions, gate: GateConfig = DERIVED, task: str = "regression"):
    cfg = _cfg(gate, task)
    derived = derive(cfg, np.asarray(train_y, float), np.asarray(holdout_y, float), has_champion=False)
    frame = pd.DataFrame(index=range(len(holdout_y)))
    evaluation = evaluate_models(frame, holdout_y, predictions, None, cfg, derived=derived)
    return evaluation, evaluate_gate(cfg.gate, evaluation)


def test_a_first_model_must_beat_the_training_median_on_the_same_holdout() -> None:
    rng = np.random.default_rng(0)
    train, holdout = rng.normal(200_000, 40_000, 500), rng.normal(200_000, 40_000, 200)
    good = holdout + rng.normal(0, 5_000, 200)  # a house-price model far from flights' 60-minute limit
    evaluation, gate = _first_model(train, holdout, good)
    (rule,) = [r for r in gate.rules if r.name == "baseline_main_metric"]
    naive = float(np.mean(np.abs(holdout - np.median(train))))
    assert gate.passed and rule.limit == pytest.approx(naive) and rule.value < naive
    assert evaluation.baseline["mae"] == pytest.approx(naive)
    assert evaluation.derived[1] == (f"a first model must beat the naive baseline: MAE {naive:.2f} on this holdout, "
                                     f"predicting the training median ({np.median(train):.4g}) for every row "
                                     "(gate.absolute_max_metric)")
    _, lazy = _first_model(train, holdout, np.full(200, np.median(train) + 30_000))
    (failed,) = lazy.failures()
    assert failed.name == "baseline_main_metric" and "does not beat the naive baseline's" in failed.reason


def test_the_sanity_range_is_the_training_targets_range_with_a_margin() -> None:
    train = np.array([0.0, 40.0, 100.0])
    evaluation, gate = _first_model(train, np.array([10.0, 20.0]), np.array([10.0, 160.0]))
    stats = evaluation.predictions
    assert (stats.range_min, stats.range_max) == (-50.0, 150.0) and stats.outside_range == 1
    assert evaluation.derived[0] == ("sanity range [-50, 150]: the training target's [0, 100] widened by 50% of its "
                                     "width (gate.prediction_min / prediction_max)")
    assert "sanity_range" in [r.name for r in gate.failures()]
    configured = dataclasses.replace(DERIVED, prediction_min=-1000.0, prediction_max=1000.0, absolute_max_metric=99.0)
    kept, _ = _first_model(train, np.array([10.0, 20.0]), np.array([10.0, 160.0]), configured)
    assert kept.derived == [] and kept.predictions.range_max == 1000.0  # what the config sets is used as set


def test_a_binary_model_is_judged_against_the_base_rate_in_zero_to_one() -> None:
    gate = dataclasses.replace(DERIVED, main_metric="logloss")
    train, holdout = np.array([0, 0, 0, 1.0]), np.array([0, 1, 0, 0.0])
    evaluation, result = _first_model(train, holdout, np.array([0.1, 0.8, 0.1, 0.1]), gate, task="binary")
    assert (evaluation.predictions.range_min, evaluation.predictions.range_max) == (0.0, 1.0)
    assert "predicting the training base rate (0.25)" in evaluation.derived[1]
    (rule,) = [r for r in result.rules if r.name == "baseline_main_metric"]
    assert rule.passed and rule.value < rule.limit  # better than always saying 0.25 (calibration is another rule)


def _dataset(**values: object) -> DatasetConfig:
    return dataclasses.replace(load_config(shipped_configs()["flights"]).dataset, **{
        "min_rows": None, "row_change_band": None, "sample_fraction": 1.0, **values})


def test_row_bands_are_read_from_the_partitions_seen() -> None:
    ds = _dataset()
    assert min_rows_of(ds, {}) == (1, "derived: no other partition yet; dataset.min_rows sets it")
    assert min_rows_of(ds, {"2009": 552, "2010": 540, "2011": 560})[0] == 56  # a tenth of the median
    short = validate_min_rows({"2012": 40}, ds, {"2009": 552, "2010": 540, "2011": 560})
    assert not short.passed and short.message == ("partition 2012: 40 rows, fewer than the minimum 56 (derived: 10% "
                                                  "of the median 552 rows of 3 other partitions; dataset.min_rows "
                                                  "sets it)")
    assert row_band(ds.row_change_band, [1000]) == (math.inf, (
        "derived: not judged on first sight, one earlier partition gives no band (from two on: 2x their spread, at "
        "least ±50%); dataset.row_change_band sets it"))
    band, how = row_band(ds.row_change_band, [100, 150, 100])  # one of them 50% above the others: twice that is allowed
    assert band == pytest.approx(1.0) and how.startswith("derived: 2x the ±50% the 3 partitions seen differ by")
    grown = validate_row_change({"a": 100, "b": 150, "c": 100, "d": 190}, ["d"], ds)
    assert grown.passed and grown.message.endswith("at least ±50%; dataset.row_change_band sets it)")
    assert row_band(0.3, [100, 150]) == (0.3, "")  # configured: as given


def test_the_derived_sanity_range_keeps_the_targets_declared_bounds() -> None:
    """A price declared ``min: 0``: the range widened below zero is floored there (and capped at a declared max)."""
    cfg = _cfg()
    columns = {**cfg.dataset.columns, "arr_delay": dataclasses.replace(cfg.dataset.columns["arr_delay"], min=0.0,
                                                                        max=120.0)}
    cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, columns=columns))
    derived = derive(cfg, np.array([10.0, 40.0, 100.0]), np.array([20.0]), has_champion=True)
    assert (derived.prediction_min, derived.prediction_max) == (0.0, 120.0)
    assert derived.lines[0] == ("sanity range [0, 120]: the training target's [10, 100] widened by 50% of its width, "
                                "floored at the target's declared minimum 0, capped at its declared maximum 120 "
                                "(gate.prediction_min / prediction_max)")


def test_an_unset_main_metric_is_the_tasks_natural_one(tmp_path) -> None:
    """No ``gate.main_metric``: log loss for a multiclass (and binary) target, MAE for regression; set: as given."""
    import yaml

    from mlassets.core.config.load import parse_config

    data = yaml.safe_load(shipped_configs()["flights"].read_text())
    data.get("gate", {}).pop("main_metric", None)
    assert parse_config(data).gate.main_metric == "mae"
    data["dataset"]["task"] = "multiclass"
    data["dataset"]["columns"]["arr_delay"] = {"dtype": "str"}
    data["training"]["loss"] = "auto"
    assert parse_config(data).gate.main_metric == "logloss"
    data["gate"] = {**data.get("gate", {}), "main_metric": "accuracy"}
    assert parse_config(data).gate.main_metric == "accuracy"


def test_a_target_that_trends_widens_its_own_band_as_the_history_shows_it() -> None:
    """Prices up 3% a year, cities 30% apart: against eight years pooled, the ninth is 0.9 std up."""
    from mlassets.core.data.summary import TargetStats

    ds = _dataset(target_mean_band=None, target_quantile_band=None)
    rng = np.random.default_rng(0)
    base = rng.lognormal(np.log(120_000), 0.3, 46)
    years = [TargetStats.of_values(pd.Series(base * 1.03**y * rng.lognormal(0, 0.05, 46))) for y in range(9)]
    seen, new = years[:8], years[8]
    reference = TargetStats.merge(seen)
    strict = validate_target_mean(new, reference, ["2008"], dataclasses.replace(ds, target_mean_band=0.5))
    assert not strict.passed  # the platform's former default: every later year of a trend is rejected
    derived = validate_target_mean(new, reference, ["2008"], ds, seen)
    assert derived.passed and "derived: 2x the ±" in derived.message
    assert "the 8 partitions seen differ by" in derived.message
    quartiles = validate_target_quantiles(new, reference, ["2008"], ds, seen)
    assert quartiles.passed and "dataset.target_quantile_band sets it" in quartiles.message
    crashed = TargetStats.of_values(pd.Series(base * 0.4))  # a delivery in thousands of dollars, say
    assert not validate_target_mean(crashed, reference, ["2008"], ds, seen).passed


def test_many_small_slices_are_summarised_in_one_clause_per_column() -> None:
    cities = [UnjudgedSlice(slice="city", value=f"city{i:02d}", n=3 + i, min_rows=200) for i in range(46)]
    text = summarize_unjudged([*cities, UnjudgedSlice(slice="kind", value="x", n=7, min_rows=200)])
    assert text == ("46 values of city with 3-48 rows < 200 (e.g. city45 (48), city44 (47), city43 (46)); "
                    "kind=x (7 rows < 200)")
