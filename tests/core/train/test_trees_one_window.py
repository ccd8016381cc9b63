"""``training.loader: memory`` for the boosted trees is the one reader's one window: the training rows the scan kept,
fitted at once as ``read_splits`` fits them, read once however the library reads them, and binned by LightGBM's
``Sequence`` and XGBoost's ``QuantileDMatrix`` into the boosters the in-memory matrices give (``lgb.Dataset`` and
``xgb.DMatrix`` of the whole matrix, the trees' input before there was one reader), byte for byte."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from mlassets.core.config import parse_config
from mlassets.core.train.splits import Splits, read_splits
from mlassets.core.train.trees import lightgbm_lib, xgboost_lib
from mlassets.core.train.trees.common import label, matrix
from mlassets.core.train.trees.fit import Plan, Watch, fit
from mlassets.core.train.trees.rows import read_tree_splits
from tests.core.train.trees import FAMILIES, SAMPLED, labelled, streamable, tree_config

MEMORY = {"loader": "memory", "stream_window_rows": 700}  # the window is the split's, whatever this says


def _splits(tmp_path, task: str) -> tuple[str, str]:
    if task == "regression":
        train, val = streamable(tmp_path)  # row groups of 1000 rows, rows without a target
    else:
        labelled(tmp_path / "data", task)
        train, val = tmp_path / "data" / "train.parquet", tmp_path / "data" / "validation.parquet"
    return str(train), str(val)


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_the_in_memory_split_is_one_window_read_once_with_read_splits_numbers(task, tmp_path) -> None:
    train, val = _splits(tmp_path, task)
    cfg = parse_config(tree_config("lightgbm", task=task, **MEMORY))
    splits, ref = read_tree_splits(cfg, train, val, None), read_splits(cfg, train, val, None)
    assert splits.pre.to_dict() == ref.pre.to_dict()  # exact means and deviations, not merged summaries
    assert (splits.center, splits.scale, splits.classes) == (ref.center, ref.scale, ref.classes)
    assert (splits.n_train, splits.n_val) == (ref.n_train, ref.n_val)
    np.testing.assert_array_equal(splits.y_val, ref.y_val)
    read, targets, where = splits.readers["train"]
    reads: list[int] = []

    def counted() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        reads.append(1)
        yield from read()

    splits.readers["train"] = counted, targets, where
    rows, whole = splits.rows("train"), matrix(ref.x_cat, ref.x_num)
    assert rows.one_window() and len(rows) == len(whole)
    picked = np.sort(np.random.default_rng(0).choice(len(whole), 300, replace=False))
    np.testing.assert_array_equal(np.array([rows[i] for i in picked]), whole[picked])  # LightGBM's sampled rows
    np.testing.assert_array_equal(rows[0:len(whole)], whole)
    np.testing.assert_array_equal(rows[10], whole[10])  # backwards: from the window, not the file
    for _ in range(2):  # XGBoost's two passes
        (x, y), = rows.batches()
        np.testing.assert_array_equal(x, whole)
        np.testing.assert_array_equal(y, ref.y)
    np.testing.assert_array_equal(rows.labels(), ref.y)
    assert reads == [1]
    x_val, = splits.rows("validation").batches()
    np.testing.assert_array_equal(x_val[0], matrix(ref.val_cat, ref.val_num))


def _in_memory(family: str, engine, ref: Splits) -> None:
    """The engine's datasets as the library makes them from the whole matrices."""
    x, x_val = matrix(ref.x_cat, ref.x_num), matrix(ref.val_cat, ref.val_num)
    if family == "lightgbm":
        import lightgbm as lgb

        params = {k: engine.params[k] for k in ("max_bin", "data_random_seed", "verbosity", "num_threads")}
        cats = list(range(len(ref.pre.categorical)))
        engine.train = lgb.Dataset(x, label=label(ref.y), params=params, categorical_feature=cats).construct()
        engine.valid = lgb.Dataset(x_val, label=label(ref.y_val), reference=engine.train, params=params,
                                   categorical_feature=cats).construct()
    else:
        import xgboost as xgb

        types = xgboost_lib.feature_types(len(ref.pre.categorical), len(ref.pre.numeric))
        engine.train, engine.valid = (xgb.DMatrix(m, label=label(t), feature_types=types, enable_categorical=True,
                                                  nthread=1) for m, t in ((x, ref.y), (x_val, ref.y_val)))


@pytest.mark.parametrize("task", ["regression", "multiclass"])
@pytest.mark.parametrize("family", FAMILIES)
def test_one_window_gives_the_boosters_the_in_memory_matrices_give(family, task, tmp_path) -> None:
    train, val = _splits(tmp_path, task)
    cfg = parse_config(tree_config(family, {**SAMPLED, "rounds": 20, "early_stopping_rounds": 0}, task=task,
                                   **MEMORY))
    lib = lightgbm_lib if family == "lightgbm" else xgboost_lib
    splits, ref = read_tree_splits(cfg, train, val, None), read_splits(cfg, train, val, None)
    engines = {"window": lib.Engine(cfg, splits, 1), "matrices": lib.Engine(cfg, splits, 1)}
    _in_memory(family, engines["matrices"], ref)
    got = {k: fit(e, splits, Plan(20, 0, 10), Watch())[0] for k, e in engines.items()}  # two chunks of 10 rounds
    window, matrices = got["window"], got["matrices"]
    assert window.model == matrices.model and window.curves == matrices.curves
    assert window.arrays.keys() == matrices.arrays.keys()
    for name, values in window.arrays.items():  # LightGBM's carried scores
        np.testing.assert_array_equal(values, matrices.arrays[name])
