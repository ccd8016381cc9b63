"""Metrics and the per-slice table against hand-computed numbers."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pandas as pd
import pytest

from mlassets.core.evaluate import Evaluation, evaluate_models, metric_value, regression_metrics, slice_table
from mlassets.core.scoring import evaluation_metrics, metric_key


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


def test_slice_table_matches_groupby():
    frame, y, cand, champ = small_frame()
    table = slice_table(frame, y, {"candidate": cand, "champion": champ}, ["origin", "carrier"])
    assert list(table.columns) == ["slice", "value", "n", "candidate_mae", "champion_mae"]
    assert list(zip(table["slice"], table["value"], strict=True)) == sorted(
        zip(table["slice"], table["value"], strict=True)
    )

    work = frame.assign(c=np.abs(cand - y), h=np.abs(champ - y))
    for col in ["origin", "carrier"]:
        expected = work.groupby(col).agg(n=("c", "size"), c=("c", "mean"), h=("h", "mean"))
        got = table[table["slice"] == col].set_index("value")
        assert sorted(got.index) == sorted(expected.index)
        for value, row in expected.iterrows():
            assert got.loc[value, "n"] == row["n"]
            assert got.loc[value, "candidate_mae"] == pytest.approx(row["c"])
            assert got.loc[value, "champion_mae"] == pytest.approx(row["h"])
    # one hand-checked cell: carrier UA rows 0, 2, 3 -> candidate |2|, |3|, |10|
    ua = table[(table["slice"] == "carrier") & (table["value"] == "UA")].iloc[0]
    assert ua["n"] == 3 and ua["candidate_mae"] == pytest.approx(5.0)


def test_slice_table_values_are_strings_and_missing_is_a_group():
    frame = pd.DataFrame({"month": [1, 1, 2, None]})
    table = slice_table(frame, np.zeros(4), {"candidate": np.ones(4)}, ["month"])
    assert all(isinstance(v, str) for v in table["value"])
    assert table["n"].sum() == 4


def test_slice_table_is_fast_on_a_million_rows():
    rng = np.random.default_rng(0)
    n = 1_000_000
    frame = pd.DataFrame({"dest": rng.integers(0, 100, n).astype(str)})
    y = rng.normal(size=n)
    start = time.perf_counter()
    table = slice_table(frame, y, {"candidate": y + 1, "champion": y - 2}, ["dest"])
    assert time.perf_counter() - start < 2.0
    assert len(table) == 100 and table["n"].sum() == n
    assert np.allclose(table["candidate_mae"], 1.0) and np.allclose(table["champion_mae"], 2.0)


def test_evaluation_round_trip_through_json():
    frame, y, cand, champ = small_frame()
    ev = evaluate_models(frame, y, cand, champ, ["origin", "carrier"])
    assert ev.champion is not None and ev.candidate["mae"] == pytest.approx(np.mean(np.abs(cand - y)))
    back = Evaluation.from_dict(json.loads(json.dumps(ev.to_dict())))
    assert back.candidate == ev.candidate and back.champion == ev.champion
    pd.testing.assert_frame_equal(back.slices, ev.slices)


def test_evaluation_without_champion():
    frame, y, cand, _ = small_frame()
    ev = evaluate_models(frame, y, cand, None, ["origin"])
    assert ev.champion is None
    assert list(ev.slices.columns) == ["slice", "value", "n", "candidate_mae"]
    back = Evaluation.from_dict(json.loads(json.dumps(ev.to_dict())))
    assert back.champion is None
    pd.testing.assert_frame_equal(back.slices, ev.slices)


def test_metric_value_and_rmse_slices():
    frame, y, cand, champ = small_frame()
    assert metric_value("mae", y, cand) == pytest.approx(regression_metrics(y, cand)["mae"])
    assert metric_value("rmse", y, cand) == pytest.approx(regression_metrics(y, cand)["rmse"])
    with pytest.raises(ValueError, match="unknown metric"):
        metric_value("r2", y, cand)
    ev = evaluate_models(frame, y, cand, champ, ["carrier"], main_metric="rmse")
    ua = ev.slices[ev.slices["value"] == "UA"].iloc[0]
    assert list(ev.slices.columns)[3:] == ["candidate_mae", "candidate_rmse", "champion_mae", "champion_rmse"]
    assert ua["candidate_rmse"] == pytest.approx(math.sqrt((4 + 9 + 100) / 3))


def test_mlflow_metrics_per_slice_have_valid_names():
    from mlflow.utils.validation import _validate_metric_name

    frame = pd.DataFrame({"carrier": ["UA", "UA", "a=b:c/d", ".."]})
    y = np.array([1.0, 2.0, 3.0, 4.0])
    ev = evaluate_models(frame, y, y + 1, y - 2, ["carrier"])
    ev.performance = {"candidate": {"single_p99_ms": 1.5, "size_bytes": 2048.0}}
    metrics = evaluation_metrics(ev)
    assert metrics["slice_mae/carrier/UA"] == 1.0 and metrics["slice_champion_mae/carrier/UA"] == 2.0
    assert metrics["slice_n/carrier/UA"] == 2.0 and metrics["slice_mae/carrier/a_b_c_d"] == 1.0
    assert metrics["holdout_candidate_mae"] == 1.0 and metrics["candidate_single_p99_ms"] == 1.5
    for name in metrics:
        _validate_metric_name(name)
    assert metric_key("slice_mae", "carrier", "..") == "slice_mae/carrier/_"


def test_evaluation_round_trip_keeps_performance():
    frame, y, cand, champ = small_frame()
    ev = evaluate_models(frame, y, cand, champ, ["origin"])
    ev.performance = {"candidate": {"single_p99_ms": 1.5, "size_bytes": 2048.0}, "champion": {"size_bytes": 1.0}}
    back = Evaluation.from_dict(json.loads(json.dumps(ev.to_dict())))
    assert back.performance == ev.performance and back.task == "regression" and back.calibration is None


def test_categorical_slice_columns_give_the_same_table():
    frame, y, cand, champ = small_frame()
    frame = frame.assign(origin=frame["origin"].where(frame.index != 2))  # one missing value
    plain = slice_table(frame, y, {"candidate": cand, "champion": champ}, ["origin", "carrier"])
    cats = frame.astype("category")
    cats["carrier"] = cats["carrier"].cat.add_categories(["unused"])
    table = slice_table(cats, y, {"candidate": cand, "champion": champ}, ["origin", "carrier"])
    pd.testing.assert_frame_equal(table, plain)
    assert "nan" in set(table["value"]) and "unused" not in set(table["value"])
