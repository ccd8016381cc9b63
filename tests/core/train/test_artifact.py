"""Model bundle: save/load round trip, manifest integrity, tensor-only weights, scoring raw rows."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.artifact import ModelBundle, bundle_size_bytes, load_bundle, save_bundle
from mlassets.core.train.torch_run.mlp import TabularMLP

CAT = ["carrier", "origin"]
NUM = ["distance", "temp"]
MODEL_CONFIG = {"registered_name": "test_model", "embedding_dim": 4, "hidden": [8, 4], "dropout": 0.0}

UNPICKLED: list[str] = []


def _mark_unpickled() -> str:
    UNPICKLED.append("ran")
    return "side effect"


class Payload:
    """An object whose unpickling runs code; weights_only loading must never execute it."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (_mark_unpickled, ())


def _frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    temp = rng.normal(15, 8, n)
    temp[::7] = np.nan
    return pd.DataFrame({
        "carrier": rng.choice(["AA", "DL", "UA"], n),
        "origin": rng.choice(["EWR", "JFK", "LGA"], n),
        "distance": rng.uniform(100, 2500, n),
        "temp": temp,
        "arr_delay": rng.normal(5, 30, n),
    })


def _bundle() -> ModelBundle:
    torch.manual_seed(0)
    pre = Preprocessor.fit(_frame(), CAT, NUM)
    model = TabularMLP(pre.cardinalities, len(NUM), 4, [8, 4], 0.0)
    return ModelBundle(model, pre, MODEL_CONFIG, "arr_delay", 3.0, 25.0, {"data_version": "abc"})


def _rewrite_manifest(directory: Path, name: str) -> None:
    """What an attacker with write access would do: make the manifest agree with a swapped file."""
    manifest = json.loads((directory / "MANIFEST.json").read_text())
    data = (directory / name).read_bytes()
    manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (directory / "MANIFEST.json").write_text(json.dumps(manifest))


def test_round_trip_gives_identical_predictions(tmp_path: Path) -> None:
    bundle, df = _bundle(), _frame(seed=1)
    path = save_bundle(bundle, tmp_path / "model")
    assert sorted(p.name for p in path.iterdir()) == ["MANIFEST.json", "bundle.json", "weights.pt"]
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no temp dirs left behind
    loaded = load_bundle(path)
    expected = bundle.predict(df)
    assert expected.dtype == np.float64 and expected.shape == (len(df),)
    np.testing.assert_array_equal(loaded.predict(df), expected)  # the promise: same rows, batch size and CPU
    np.testing.assert_array_equal(loaded.predict(df, batch_size=7), bundle.predict(df, batch_size=7))
    # Across batch sizes only closeness is promised: BLAS kernels (MKL on AMD, AVX512) block the rows differently.
    np.testing.assert_allclose(loaded.predict(df, batch_size=7), expected, rtol=1e-5, atol=1e-4)
    assert loaded.meta == {"data_version": "abc"} and loaded.target == "arr_delay"
    assert (loaded.target_center, loaded.target_scale) == (3.0, 25.0)
    assert loaded.model_config == MODEL_CONFIG
    assert bundle_size_bytes(path) == sum(p.stat().st_size for p in path.iterdir())


def test_save_replaces_an_existing_bundle(tmp_path: Path) -> None:
    save_bundle(_bundle(), tmp_path / "model")
    bundle = _bundle()
    bundle.target_center = 9.0
    save_bundle(bundle, tmp_path / "model")
    assert load_bundle(tmp_path / "model").target_center == 9.0
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_tampered_weights_rejected_by_manifest(tmp_path: Path) -> None:
    path = save_bundle(_bundle(), tmp_path / "model")
    state = torch.load(path / "weights.pt", weights_only=True)
    first = next(iter(state))
    state[first] = state[first] + 1.0
    torch.save(state, path / "weights.pt")
    with pytest.raises(ValueError, match="weights.pt"):
        load_bundle(path)


def test_missing_file_rejected_by_manifest(tmp_path: Path) -> None:
    path = save_bundle(_bundle(), tmp_path / "model")
    (path / "bundle.json").unlink()
    with pytest.raises(ValueError, match="bundle.json"):
        load_bundle(path)


@pytest.mark.parametrize("payload", [{"w": Payload()}, Payload()], ids=["dict-with-object", "object"])
def test_pickled_objects_refused_by_weights_only(tmp_path: Path, payload: object) -> None:
    path = save_bundle(_bundle(), tmp_path / "model")
    torch.save(payload, path / "weights.pt")
    _rewrite_manifest(path, "weights.pt")  # the manifest alone can't stop this; weights_only must
    UNPICKLED.clear()
    with pytest.raises(ValueError, match="weights.pt"):
        load_bundle(path)
    assert UNPICKLED == []


def test_scores_raw_rows_with_unseen_categories(tmp_path: Path) -> None:
    loaded = load_bundle(save_bundle(_bundle(), tmp_path / "model"))
    rows = pd.DataFrame({
        "carrier": ["AA", "ZZ", None], "origin": ["SFO", "JFK", np.nan],
        "distance": [500.0, np.nan, 1200.0], "temp": [np.nan, 3.0, 40.0],
        "extra_column": ["ignored", "ignored", "ignored"],
    })
    pred = loaded.predict(rows)
    assert pred.shape == (3,) and np.isfinite(pred).all()
    with pytest.raises(ValueError, match="'distance'"):
        loaded.predict(rows.drop(columns=["distance"]))


def test_a_bounded_target_is_respected_by_the_bundle(tmp_path: Path) -> None:
    bundle = _bundle()
    bundle.target_center = -500.0  # predictions well below zero ...
    raw = bundle.predict(_frame(seed=2))
    assert (raw < 0).all()
    bundle.model_config = {**MODEL_CONFIG, "output_min": 0.0}  # ... until the config bounds the target
    loaded = load_bundle(save_bundle(bundle, tmp_path / "model"))
    assert (loaded.predict(_frame(seed=2)) == 0.0).all()  # served predictions respect it too


@pytest.mark.parametrize("out_features", [1, 3])
def test_a_torch_model_scored_a_block_at_a_time_gives_each_row_its_own_output(monkeypatch, out_features) -> None:
    """The torch families call the module ``PREDICT_ROWS`` rows at a time (activations in reused memory): every row's
    output is the one the module gives it in a single call over all rows, for one output or k logits, and no rows."""
    from mlassets.core.train.family import family_of
    from mlassets.core.train.torch_run import torch_nn

    bundle = _bundle()
    torch.manual_seed(1)
    model = TabularMLP(bundle.preprocessor.cardinalities, len(NUM), 4, [8, 4], 0.0, out_features).eval()
    x_cat, x_num = bundle.preprocessor.transform(_frame(n=1000, seed=3))
    with torch.no_grad():
        whole = model(torch.from_numpy(x_cat), torch.from_numpy(x_num)).double().numpy()
    monkeypatch.setattr(torch_nn, "PREDICT_ROWS", 64)  # 1000 rows: 15 full blocks and a part
    family = family_of("mlp")
    blocks = family.predict(model, x_cat, x_num)
    assert blocks.shape == whole.shape == ((1000,) if out_features == 1 else (1000, out_features))
    np.testing.assert_allclose(blocks, whole, rtol=1e-6, atol=1e-7)
    assert family.predict(model, x_cat[:0], x_num[:0]).shape[0] == 0
