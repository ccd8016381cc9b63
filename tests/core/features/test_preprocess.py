"""Preprocessor: vocabularies, unknown/missing handling, standardization and JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mlassets.core.features.preprocess import Preprocessor

CAT = ["carrier", "dep_hour"]
NUM = ["distance", "temp"]


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "carrier": ["UA", "AA", "DL", "UA", None],
            "dep_hour": [5, 7, 5, 23, 7],
            "distance": [100.0, 200.0, 300.0, 400.0, 500.0],
            "temp": [10.0, np.nan, 30.0, 50.0, 10.0],
            "arr_delay": [1.0, 2.0, 3.0, 4.0, 5.0],
        }
    )


def test_fit_sorted_vocab_and_cardinalities() -> None:
    pre = Preprocessor.fit(_frame(), CAT, NUM)
    assert pre.vocab["carrier"] == {"AA": 1, "DL": 2, "UA": 3}
    assert pre.vocab["dep_hour"] == {"23": 1, "5": 2, "7": 3}
    assert pre.cardinalities == [4, 4]


def test_unknown_and_missing_categories_map_to_zero() -> None:
    pre = Preprocessor.fit(_frame(), CAT, NUM)
    new = pd.DataFrame(
        {"carrier": ["ZZ", None, "AA"], "dep_hour": [3.0, np.nan, 7.0],  # floats with NaN: 7.0 reads as "7"
         "distance": [1.0, 2.0, 3.0], "temp": [1.0, 2.0, 3.0]}
    )
    x_cat, x_num = pre.transform(new)
    assert x_cat.dtype == np.int64 and x_num.dtype == np.float32  # arrays: trees use them as they are
    assert x_cat.tolist() == [[0, 0], [0, 0], [1, 3]]


def test_numeric_nan_becomes_mean_and_is_standardized() -> None:
    df = _frame()
    pre = Preprocessor.fit(df, CAT, NUM)
    assert pre.means["temp"] == pytest.approx(25.0)  # mean of the non-missing values
    _, x_num = pre.transform(df)
    assert x_num[1, 1].item() == 0.0  # NaN -> mean -> 0 after standardization
    distance = x_num[:, 0]
    assert distance.mean() == pytest.approx(0.0, abs=1e-6)
    assert distance.std() == pytest.approx(1.0, abs=1e-6)


def test_constant_column_has_unit_std() -> None:
    df = _frame().assign(temp=7.0)
    pre = Preprocessor.fit(df, CAT, NUM)
    assert pre.stds["temp"] == 1.0
    _, x_num = pre.transform(df)
    assert (x_num[:, 1] == 0).all()


def test_round_trip_gives_identical_transforms() -> None:
    df = _frame()
    pre = Preprocessor.fit(df, CAT, NUM)
    again = Preprocessor.from_dict(json.loads(json.dumps(pre.to_dict())))
    assert again == pre
    for a, b in zip(pre.transform(df), again.transform(df), strict=True):
        assert np.array_equal(a, b)


def test_missing_column_is_named() -> None:
    pre = Preprocessor.fit(_frame(), CAT, NUM)
    with pytest.raises(ValueError, match="'temp'"):
        pre.transform(_frame().drop(columns=["temp"]))
    with pytest.raises(ValueError, match="'weekday'"):
        Preprocessor.fit(_frame(), [*CAT, "weekday"], NUM)


def test_from_dict_rejects_incomplete_state() -> None:
    state = Preprocessor.fit(_frame(), CAT, NUM).to_dict()
    del state["means"]["temp"]
    with pytest.raises(ValueError, match="temp"):
        Preprocessor.from_dict(state)


def test_a_few_rows_are_coded_as_many_rows_are() -> None:
    """Up to ``FEW_ROWS`` rows (a served request) each value is looked up on its own, past it a column is
    factorized: both give every row the same codes, whatever the column's type and its missing values."""
    from mlassets.core.features.preprocess import FEW_ROWS

    pre = Preprocessor.fit(_frame(), CAT, NUM)
    n = FEW_ROWS * 3
    rng = np.random.default_rng(0)
    many = pd.DataFrame({
        "carrier": pd.Series(rng.choice(np.array(["UA", "AA", "DL", "ZZ", None, np.nan], dtype=object), n)),
        "dep_hour": rng.choice([5.0, 7.0, 23.0, 3.0, np.nan], n),  # floats: 7.0 reads as "7"
        "distance": pd.array(rng.choice([100, 250, 400], n), dtype="Int64"),  # nullable ints
        "temp": rng.choice([10.0, np.nan, np.inf, 30.0], n),
    })
    many.loc[::7, "distance"] = pd.NA
    whole = pre.transform(many)
    for start in range(0, n, 5):  # 5-row requests: the one-by-one path
        few = pre.transform(many.iloc[start:start + 5].reset_index(drop=True))
        assert np.array_equal(few[0], whole[0][start:start + 5])
        assert np.array_equal(few[1], whole[1][start:start + 5])
    assert {0, 1, 2, 3} <= set(whole[0][:, 0].tolist())  # unknown/missing and each known carrier were seen
    ints = pre.transform(many.assign(dep_hour=[5, 7, 23, 3] * (n // 4)).head(4))[0][:, 1]
    assert ints.tolist() == [2, 3, 1, 0]  # ints read as the vocabulary's keys


def test_a_shared_factorization_codes_as_each_column_alone() -> None:
    """Columns factorized once (``factorize_columns``, shared by two models scoring one frame) give every row the
    codes ``transform`` finds by itself, for strings with missing values, floats, and values that do not sort."""
    import datetime

    from mlassets.core.features.preprocess import factorize_columns

    train = _frame().assign(dep_hour=[5, "x", datetime.date(2020, 1, 1), 23, None])
    pre = Preprocessor.fit(train, CAT, NUM)
    rng = np.random.default_rng(1)
    n = 500
    many = pd.DataFrame({
        "carrier": pd.Series(rng.choice(np.array(["UA", "AA", "DL", "ZZ", None, np.nan], dtype=object), n)),
        "dep_hour": pd.Series(rng.choice(np.array([5, 5.0, "x", datetime.date(2020, 1, 1), None], dtype=object), n)),
        "distance": rng.uniform(0, 500, n),
        "temp": rng.choice([10.0, np.nan, 30.0], n),
    })
    factorized = factorize_columns(many, CAT)
    codes, uniques = factorized["carrier"]
    assert list(uniques) == ["AA", "DL", "UA", "ZZ"] and (codes == -1).sum() == many["carrier"].isna().sum()
    shared, alone = pre.transform(many, factorized), pre.transform(many)
    assert np.array_equal(shared[0], alone[0]) and np.array_equal(shared[1], alone[1])
    hours = pre.vocab["dep_hour"]  # 5 and 5.0 read as "5"; None is unknown
    assert set(alone[0][:, 1].tolist()) == {0, hours["5"], hours["x"], hours["2020-01-01"]}
