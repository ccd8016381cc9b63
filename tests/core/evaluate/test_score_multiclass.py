"""Scoring a multiclass holdout with real bundles (untrained seeded networks): the stored predictions hold each
model's probabilities, so the record comes back identical from the stored file; the served and signed answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from mlassets.core.evaluate.score import has_champion, score_holdout
from mlassets.core.evaluate.scored import evaluate_multiclass, evaluation_of
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.artifact import ModelBundle
from mlassets.core.train.mlflow_model import signature_of
from mlassets.core.train.outputs import probabilities, served
from mlassets.core.train.torch_run.mlp import build_model
from tests.core.evaluate.test_multiclass import CLASSES, mc_config, penguins_like


def bundle(rows: pd.DataFrame, classes: list[str], seed: int) -> ModelBundle:
    torch.manual_seed(seed)
    pre = Preprocessor.fit(rows, ["island", "sex"], ["bill_length_mm"])
    config = {"embedding_dim": 4, "hidden": [8]}
    model = build_model(config, pre.cardinalities, len(pre.numeric), len(classes))
    return ModelBundle(model=model, preprocessor=pre, model_config=config, target="species", task="multiclass",
                       classes=classes)


@pytest.fixture(scope="module")
def holdout() -> pd.DataFrame:
    frame, y = penguins_like(300, seed=4)
    bill = np.random.default_rng(4).normal(44.0, 5.0, 300)
    return frame.assign(species=y, bill_length_mm=bill).set_index(np.arange(1000, 1300))


def test_stored_predictions_give_back_the_same_record(holdout, tmp_path):
    cfg = mc_config()
    candidate, champion = bundle(holdout, CLASSES, 1), bundle(holdout, ["Adelie", "Gentoo"], 2)
    frame = score_holdout(holdout, cfg, candidate, champion)
    assert list(frame.columns) == ["island", "y", "candidate", *(f"candidate_probability_{c}" for c in CLASSES),
                                   "champion", "champion_probability_Adelie", "champion_probability_Gentoo"]
    assert frame.index.equals(holdout.index) and has_champion(frame)
    np.testing.assert_allclose(probabilities(frame, "candidate").sum(axis=1), 1.0)
    assert list(probabilities(frame, "champion").columns) == ["Adelie", "Gentoo"]
    assert (frame["candidate"].to_numpy() == candidate.predict_labels(holdout)).all()

    record = evaluation_of(frame, cfg, champion_version="4", data_version="d" * 40)
    expected = evaluate_multiclass(holdout[["island"]], holdout["species"],
                                   pd.DataFrame(candidate.predict(holdout), columns=CLASSES),
                                   pd.DataFrame(champion.predict(holdout), columns=["Adelie", "Gentoo"]), cfg,
                                   champion_version="4", data_version="d" * 40)
    assert record.to_json() == expected.to_json()
    assert record.champion["unseen_class_rows"] == (holdout["species"] == "Chinstrap").sum()
    frame.to_parquet(tmp_path / "predictions.parquet", index=False)  # what log_predictions stores
    stored = pd.read_parquet(tmp_path / "predictions.parquet")
    assert evaluation_of(stored, cfg, champion_version="4", data_version="d" * 40).to_json() == record.to_json()


def test_without_a_champion_the_record_has_none(holdout, tmp_path):
    frame = score_holdout(holdout, mc_config(), bundle(holdout, CLASSES, 1), None)
    frame.to_parquet(tmp_path / "p.parquet", index=False)
    stored = pd.read_parquet(tmp_path / "p.parquet")
    assert not has_champion(frame) and not has_champion(stored)
    record = evaluation_of(stored, mc_config())
    assert record.champion is None and all(r.champion is None for r in record.slices)


def test_a_served_multiclass_model_answers_label_and_probabilities_and_signs_them(holdout):
    model = bundle(holdout, CLASSES, 1)
    answer = served(model, holdout.head(10))
    assert list(answer.columns) == ["prediction", *(f"probability_{c}" for c in CLASSES)]
    np.testing.assert_array_equal(answer.iloc[:, 1:].to_numpy(), model.predict(holdout.head(10)))
    assert answer["prediction"].tolist() == list(model.predict_labels(holdout.head(10)))
    outputs = signature_of(model, holdout).outputs
    assert outputs.input_names() == ["prediction", *(f"probability_{c}" for c in CLASSES)]
