"""A warm start begins from a registered model's weights: embedding rows by category name, other layers as
they were; it learns from there (a first epoch far better than a cold start's) and is reproducible."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.artifact import load_bundle
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.torch_run.mlp import TabularMLP
from mlassets.core.train.torch_run.process import run_training
from mlassets.core.train.torch_run.warm_start import mapped_state
from tests.core.train.test_train import _config, _job, data  # noqa: F401 - the synthetic splits fixture

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")


def _pre(carriers: list[str]) -> Preprocessor:
    return Preprocessor(["carrier"], ["distance"], {"carrier": {c: i + 1 for i, c in enumerate(carriers)}},
                        {"distance": 0.0}, {"distance": 1.0})


def test_embedding_rows_follow_the_category_names_and_other_layers_are_copied() -> None:
    torch.manual_seed(0)
    old_pre = _pre(["AA", "DL", "UA"])
    old = TabularMLP(old_pre.cardinalities, 1, embedding_dim=3, hidden=[4])
    bundle = type("B", (), {"model": old, "preprocessor": old_pre})()
    new_pre = _pre(["AA", "B6", "UA"])  # DL is gone, B6 is new: UA moves from row 3 to row 3, B6 takes row 2
    torch.manual_seed(1)
    new = TabularMLP(new_pre.cardinalities, 1, embedding_dim=3, hidden=[4])
    seeded = {k: v.clone() for k, v in new.state_dict().items()}
    state, kept = mapped_state(bundle, new_pre, new)
    old_rows, rows = old.state_dict()["embeddings.0.weight"], state["embeddings.0.weight"]
    assert torch.equal(rows[0], old_rows[0])  # unknown
    assert torch.equal(rows[1], old_rows[1])  # AA
    assert torch.equal(rows[2], seeded["embeddings.0.weight"][2])  # B6: new, keeps its seeded row
    assert torch.equal(rows[3], old_rows[3])  # UA
    assert torch.equal(state["mlp.0.weight"], old.state_dict()["mlp.0.weight"]) and kept == []

    wider = TabularMLP(new_pre.cardinalities, 1, embedding_dim=3, hidden=[8])  # a different model.hidden
    state, kept = mapped_state(bundle, new_pre, wider)
    assert "mlp.0.weight" in kept and torch.equal(state["mlp.0.weight"], wider.state_dict()["mlp.0.weight"])


def test_a_warm_start_begins_where_the_model_was_and_is_reproducible(data, tmp_path: Path) -> None:  # noqa: F811
    one_epoch = _config()
    one_epoch["training"]["epochs"] = 1
    first = run_training(_job(data, tmp_path / "first"), PrintReporter())
    cold = run_training(_job(data, tmp_path / "cold", one_epoch), PrintReporter())
    warm_job = dataclasses.replace(_job(data, tmp_path / "warm", one_epoch), init_bundle=first.model_dir,
                                   warm_start_from="1")
    warm = run_training(warm_job, PrintReporter())
    again = run_training(dataclasses.replace(warm_job, out_dir=str(tmp_path / "again")), PrintReporter())
    assert warm.val_metric < cold.val_metric  # one epoch on top of a trained model beats one from scratch
    assert warm.weights_sha256 == again.weights_sha256 != cold.weights_sha256
    assert np.isfinite(load_bundle(warm.model_dir).predict(pd.read_parquet(data[1]))).all()
