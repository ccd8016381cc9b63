"""The evaluation record: metrics overall and per slice against hand-computed numbers, intervals, JSON form."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import GateConfig, PipelineConfig, load_config, shipped_configs
from mlassets.core.evaluate.metrics import metric_value, regression_metrics
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.evaluate.score import evaluation_metrics, metric_key
from mlassets.core.evaluate.scored import evaluate_models


def config(slices: list[str], main_metric: str = "mae", **gate: object) -> PipelineConfig:
    cfg = load_config(shipped_configs()["flights"])
    return dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, slices=slices),
                               gate=GateConfig(main_metric=main_metric, **gate))


def small_frame() -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    frame = pd.DataFrame(
        {
            "origin": ["JFK", "JFK", "LGA", "EWR", "LGA", "JFK", "EWR"],
            "carrier": ["UA", "AA", "UA", "UA", "AA", "DL", "DL"],
        }
    )
    y = np.array([10.0, -5.0, 0.0, 30.0, 12.0, 7.0, -1.0])
    cand = np.array([12.0, -4.0, 3.0, 20.0, 12.0, 9.0, 0.0])
    champ = np.array([9.0, -9.0, 1.0, 25.0, 10.0, 7.5, 4.0])
    return frame, y, cand, champ


def test_regression_metrics_by_hand():
    m = regression_metrics([0.0, 2.0, 4.0], [1.0, 2.0, 1.0])
    assert m["mae"] == pytest.approx((1 + 0 + 3) / 3)
    assert m["rmse"] == pytest.approx(math.sqrt((1 + 0 + 9) / 3))
    assert m["bias"] == pytest.approx((1 + 0 - 3) / 3)
    assert m["n"] == 3


def test_regression_metrics_rejects_length_mismatch():
    with pytest.raises(ValueError, match="rows"):
        regression_metrics([1.0, 2.0], [1.0])


def test_slice_rows_match_groupby():
    frame, y, cand, champ = small_frame()
    ev = evaluate_models(frame, y, cand, champ, config(["origin", "carrier"]))
    table = ev.slice_frame()
    assert list(table.columns) == ["slice", "value", "n", "candidate_mae", "champion_mae", "change", "ci_low",
                                   "ci_high"]
    assert list(table["slice"]) == ["origin"] * 3 + ["carrier"] * 3  # config order, values sorted within
    work = frame.assign(c=np.abs(cand - y), h=np.abs(champ - y))
    for col in ["origin", "carrier"]:
        expected = work.groupby(col).agg(n=("c", "size"), c=("c", "mean"), h=("h", "mean"))
        got = table[table["slice"] == col].set_index("value")
        assert list(got.index) == sorted(expected.index)
        for value, row in expected.iterrows():
            assert got.loc[value, "n"] == row["n"]
            assert got.loc[value, "candidate_mae"] == pytest.approx(row["c"])
            assert got.loc[value, "champion_mae"] == pytest.approx(row["h"])
            assert got.loc[value, "change"] == pytest.approx(row["c"] / row["h"] - 1)
            assert got.loc[value, "ci_low"] <= got.loc[value, "ci_high"]
    # one hand-checked cell: carrier UA rows 0, 2, 3 -> candidate |2|, |3|, |10|
    ua = table[(table["slice"] == "carrier") & (table["value"] == "UA")].iloc[0]
    assert ua["n"] == 3 and ua["candidate_mae"] == pytest.approx(5.0)


def test_slice_values_are_strings_and_missing_is_a_group():
    frame = pd.DataFrame({"month": [1, 1, 2, None]})
    ev = evaluate_models(frame, np.zeros(4), np.ones(4), None, config(["month"]))
    assert all(isinstance(r.value, str) for r in ev.slices)
    assert sum(r.n for r in ev.slices) == 4


def test_a_million_rows_in_a_hundred_slices():
    rng = np.random.default_rng(0)
    n = 1_000_000
    frame = pd.DataFrame({"dest": rng.integers(0, 100, n).astype(str)})
    y = rng.normal(size=n)
    ev = evaluate_models(frame, y, y + 1, y - 2, config(["dest"]))  # its speed is measured in bench/
    assert len(ev.slices) == 100 and sum(r.n for r in ev.slices) == n
    assert all(r.candidate["mae"] == pytest.approx(1.0) and r.champion["mae"] == pytest.approx(2.0)
               for r in ev.slices)
    assert all(r.ci_low == pytest.approx(-0.5) and r.ci_high == pytest.approx(-0.5) for r in ev.slices)


def test_evaluation_round_trip_through_json():
    frame, y, cand, champ = small_frame()
    ev = evaluate_models(frame, y, cand, champ, config(["origin", "carrier"]), champion_version="3",
                         performance={"candidate": {"single_p99_ms": 1.5, "size_bytes": 2048.0}})
    assert ev.champion is not None and ev.candidate["mae"] == pytest.approx(np.mean(np.abs(cand - y)))
    back = Evaluation.from_json(ev.to_json())
    assert back.to_json() == ev.to_json() and back.champion_version == "3"
    assert back.performance == ev.performance and back.task == "regression" and back.calibration is None


def test_evaluation_without_champion():
    frame, y, cand, _ = small_frame()
    ev = evaluate_models(frame, y, cand, None, config(["origin"]))
    assert ev.champion is None and not ev.has_champion
    assert list(ev.slice_frame().columns) == ["slice", "value", "n", "candidate_mae", "change", "ci_low", "ci_high"]
    assert all(math.isnan(r.change) and r.champion is None for r in ev.slices)
    assert Evaluation.from_json(ev.to_json()).to_json() == ev.to_json()


def test_prediction_stats_count_what_the_sanity_rules_read():
    frame, y, cand, champ = small_frame()
    cand = cand.copy()
    cand[[0, 1]] = [np.nan, 5000.0]
    stats = evaluate_models(frame, y, cand, champ, config(["origin"], prediction_min=-200.0,
                                                          prediction_max=1500.0)).predictions
    assert (stats.n, stats.non_finite, stats.outside_range) == (7, 1, 1)
    assert (stats.range_min, stats.range_max, stats.seen_max) == (-200.0, 1500.0, 5000.0)


def test_metric_value_and_rmse_slices():
    frame, y, cand, champ = small_frame()
    assert metric_value("mae", y, cand) == pytest.approx(regression_metrics(y, cand)["mae"])
    assert metric_value("rmse", y, cand) == pytest.approx(regression_metrics(y, cand)["rmse"])
    with pytest.raises(ValueError, match="unknown metric"):
        metric_value("r2", y, cand)
    ev = evaluate_models(frame, y, cand, champ, config(["carrier"], main_metric="rmse"))
    table = ev.slice_frame()
    ua = table[table["value"] == "UA"].iloc[0]
    assert list(table.columns)[3:7] == ["candidate_mae", "candidate_rmse", "champion_mae", "champion_rmse"]
    assert ua["candidate_rmse"] == pytest.approx(math.sqrt((4 + 9 + 100) / 3))
    assert ua["change"] == pytest.approx(ua["candidate_rmse"] / ua["champion_rmse"] - 1)


def test_mlflow_metrics_per_slice_have_valid_names():
    from mlflow.utils.validation import _validate_metric_name

    frame = pd.DataFrame({"carrier": ["UA", "UA", "a=b:c/d", ".."]})
    y = np.array([1.0, 2.0, 3.0, 4.0])
    ev = evaluate_models(frame, y, y + 1, y - 2, config(["carrier"]),
                         performance={"candidate": {"single_p99_ms": 1.5, "size_bytes": 2048.0}})
    metrics = evaluation_metrics(ev)
    assert metrics["slice_mae/carrier/UA"] == 1.0 and metrics["slice_champion_mae/carrier/UA"] == 2.0
    assert metrics["slice_n/carrier/UA"] == 2.0 and metrics["slice_mae/carrier/a_b_c_d"] == 1.0
    assert metrics["holdout_candidate_mae"] == 1.0 and metrics["candidate_single_p99_ms"] == 1.5
    for name in metrics:
        _validate_metric_name(name)
    assert metric_key("slice_mae", "carrier", "..") == "slice_mae/carrier/_"


def test_categorical_slice_columns_give_the_same_record():
    frame, y, cand, champ = small_frame()
    frame = frame.assign(origin=frame["origin"].where(frame.index != 2))  # one missing value
    cfg = config(["origin", "carrier"])
    plain = evaluate_models(frame, y, cand, champ, cfg)
    cats = frame.astype("category")
    cats["carrier"] = cats["carrier"].cat.add_categories(["unused"])
    assert evaluate_models(cats, y, cand, champ, cfg).to_json() == plain.to_json()
    assert "nan" in {r.value for r in plain.slices} and "unused" not in {r.value for r in plain.slices}


def test_a_missing_target_never_becomes_a_nan_metric() -> None:
    frame, y, cand, champ = small_frame()
    y = y.copy()
    y[2] = np.nan
    with pytest.raises(ValueError, match=r"1 holdout rows have no value of the target 'arr_delay'; set "
                                         r"dataset.drop_missing_target: true"):
        evaluate_models(frame, y, cand, champ, config(["origin"]))
