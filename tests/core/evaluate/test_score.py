"""Scoring a regression holdout with both models: the categorical columns are factorized once for both models and the
slice columns, and the frame is what each model's own ``predict`` and the columns' own categories give."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import torch

from mlassets.core.config import load_config, shipped_configs
from mlassets.core.evaluate.score import score_holdout
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.artifact import ModelBundle
from mlassets.core.train.torch_run.mlp import build_model


def bundle(rows: pd.DataFrame, categorical: list[str], seed: int) -> ModelBundle:
    torch.manual_seed(seed)
    pre = Preprocessor.fit(rows, categorical, ["distance"])
    config = {"embedding_dim": 4, "hidden": [8]}
    model = build_model(config, pre.cardinalities, len(pre.numeric))
    return ModelBundle(model=model, preprocessor=pre, model_config=config, target="arr_delay", target_center=3.0,
                       target_scale=20.0)


def holdout(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({
        "carrier": rng.choice(np.array(["UA", "AA", "DL", "B6", None], dtype=object), n),
        "origin": pd.array(rng.choice(["JFK", "LGA", "EWR"], n), dtype="string"),
        "dest": pd.Categorical(rng.choice(["SFO", "ATL", "ORD"], n), categories=["ORD", "SFO", "ATL", "BOS"]),
        "dep_hour": rng.integers(5, 24, n),
        "month": rng.choice(["2013-01", "2013-02"], n),
        "distance": rng.uniform(100, 2500, n),
        "arr_delay": rng.normal(5.0, 30.0, n),
    })
    return frame.set_index(np.arange(2000, 2000 + n))


def test_both_models_score_as_their_own_predict_and_slices_are_their_own_categories() -> None:
    rows = holdout()
    # different vocabularies and features: the candidate knows dest, the champion dep_hour and fewer carriers
    candidate = bundle(rows, ["carrier", "origin", "dest"], 1)
    champion = bundle(rows[rows["carrier"] != "B6"], ["carrier", "origin", "dep_hour"], 2)
    cfg = load_config(shipped_configs()["flights"])
    slices = ["carrier", "origin", "dest", "dep_hour", "month"]  # strings, string dtype, categorical, ints, no feature
    cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, slices=slices))

    frame = score_holdout(rows, cfg, candidate, champion)

    expected = pd.DataFrame({c: rows[c].astype("category") for c in slices}, index=rows.index)
    expected["dep_hour"] = rows["dep_hour"].astype(str).astype("category")
    expected["y"], expected["candidate"], expected["champion"] = (
        rows["arr_delay"].to_numpy(), candidate.predict(rows), champion.predict(rows))
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)
    assert frame["carrier"].isna().sum() == rows["carrier"].isna().sum() > 0  # missing stays missing
    assert list(frame["dest"].cat.categories) == ["ORD", "SFO", "ATL", "BOS"]  # a categorical keeps its own
    alone = score_holdout(rows, cfg, candidate, None)
    pd.testing.assert_frame_equal(alone.drop(columns="champion"), frame.drop(columns="champion"), check_exact=True)
    assert alone["champion"].isna().all()
