"""Boosted trees through the model protocol: binary and multiclass tasks, the bundle round trip, refused model files,
and no torch in the training process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlassets.core.diagnose.report import diagnose_dir
from mlassets.core.train.artifact import MANIFEST, check_weights, load_bundle, postprocess, save_bundle
from mlassets.core.train.family import family_of
from mlassets.core.train.job import TrainJob
from mlassets.core.train.objectives import validation_metric
from mlassets.core.train.reporting import PrintReporter
from tests.core.train.trees import FAMILIES, SAMPLED, labelled, tree_config, tree_job


def _train(family: str, tmp: Path, task: str, **params: object):
    if task != "regression":
        labelled(tmp / "data", task)
    job = TrainJob.from_json(tree_job(tmp, tree_config(family, {"rounds": 60, **params}, task=task), "run"))
    return family_of(family).train(job, PrintReporter(), hard_crash=False)


def _rows(tmp: Path) -> pd.DataFrame:
    return pd.read_parquet(tmp / "data" / "validation.parquet")


@pytest.mark.parametrize("family", FAMILIES)
def test_binary_trees_give_probabilities_better_than_the_base_rate(family, tmp_path) -> None:
    result = _train(family, tmp_path, "binary", **SAMPLED)
    assert (result.task, result.val_metric_name, result.family) == ("binary", "logloss", family)
    rows = _rows(tmp_path)
    y = rows["arr_delay"].to_numpy(dtype=float)
    bundle = load_bundle(result.model_dir)
    p = bundle.predict(rows)
    assert p.shape == (len(rows),) and ((p > 0) & (p < 1)).all()
    base = float(np.mean(y)) * np.ones_like(y)
    logloss = float(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))))
    assert logloss < 0.8 * float(np.mean(-(y * np.log(base) + (1 - y) * np.log(1 - base))))
    x_cat, x_num = bundle.preprocessor.transform(rows)
    raw = family_of(family).predict(bundle.model, x_cat, x_num)  # logits: the bundle applies the sigmoid
    np.testing.assert_allclose(postprocess(raw, "binary", 0.0, 1.0), p, rtol=0, atol=0)
    assert validation_metric("binary", raw, y, 0.0, 1.0) == pytest.approx(result.val_metric, rel=1e-9)


@pytest.mark.parametrize("family", FAMILIES)
def test_multiclass_trees_give_one_logit_per_class(family, tmp_path) -> None:
    result = _train(family, tmp_path, "multiclass")
    bundle = load_bundle(result.model_dir)
    assert bundle.classes == ["early", "late", "on_time"] and result.val_metric_name == "logloss"
    rows = _rows(tmp_path)
    x_cat, x_num = bundle.preprocessor.transform(rows)
    raw = family_of(family).predict(bundle.model, x_cat, x_num)
    assert raw.shape == (len(rows), 3) and raw.dtype == np.float64
    probs = bundle.predict(rows)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    labels = bundle.predict_labels(rows)
    accuracy = float(np.mean(labels == rows["arr_delay"].to_numpy()))
    majority = float(rows["arr_delay"].value_counts(normalize=True).max())
    assert accuracy > majority + 0.1, (accuracy, majority)
    y = np.searchsorted(bundle.classes, rows["arr_delay"].to_numpy())
    assert validation_metric("multiclass", raw, y, 0.0, 1.0) == pytest.approx(result.val_metric, rel=1e-9)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_bundle_round_trips_and_a_tampered_model_file_is_refused(family, tmp_path) -> None:
    result = _train(family, tmp_path, "regression", rounds=20, early_stopping_rounds=5)
    rows = _rows(tmp_path)
    bundle = load_bundle(result.model_dir)
    assert bundle.family == family and result.best_epoch <= result.steps <= 20
    diagnosis = diagnose_dir(result.telemetry_dir)  # one row per round: what the dashboard's pages read
    assert diagnosis is not None and result.telemetry["steps"] == result.steps
    copy = save_bundle(bundle, tmp_path / "copy")
    np.testing.assert_array_equal(load_bundle(copy).predict(rows), bundle.predict(rows))
    weights = copy / family_of(family).weights_file
    assert weights.name == ("model.txt" if family == "lightgbm" else "model.ubj")
    assert result.weights_sha256 == json.loads((Path(result.model_dir) / MANIFEST).read_text())["files"][
        weights.name]["sha256"]

    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit
    weights.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"{weights.name} in .* does not match its MANIFEST.json checksum"):
        load_bundle(copy)
    manifest = json.loads((copy / MANIFEST).read_text())  # a forger rewrites the manifest too ...
    garbage = b"tree\nversion=v4\nnum_class=1\n" if family == "lightgbm" else b"{not ubjson"
    weights.write_bytes(garbage)
    import hashlib

    manifest["files"][weights.name] = {"sha256": hashlib.sha256(garbage).hexdigest(), "size": len(garbage)}
    (copy / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=f"{weights.name} in .*: not an? (LightGBM|XGBoost) model"):
        load_bundle(copy)  # ... the native parser refuses what is not a model (nothing is unpickled)
    with pytest.raises(ValueError, match="not the weights that were trained and gated"):
        check_weights(copy, result.weights_sha256, "the registry record")  # ... and the record names the real one


def test_mlflows_own_flavor_gives_the_boosters_raw_scores(tmp_path, home) -> None:
    """XGBoost's flavor here (LightGBM's: tests/defs/test_cross_family.py, through the training asset)."""
    import mlflow

    from mlassets.core import tracking
    from mlassets.core.train.mlflow_model import log_model, log_native, pip_requirements
    from mlassets.core.train.outputs import served
    from mlassets.core.train.trees.common import matrix

    family = "xgboost"
    result = _train(family, tmp_path, "multiclass", rounds=15)
    bundle, rows = load_bundle(result.model_dir), _rows(tmp_path)
    tracking.configure()
    with mlflow.start_run() as run:
        uri = log_native(result.model_dir)
        pyfunc_uri = log_model(result.model_dir)
    assert mlflow.get_logged_model(uri.removeprefix("models:/")).source_run_id == run.info.run_id
    flavor = getattr(mlflow, family)
    native = flavor.load_model(uri)
    x_cat, x_num = bundle.preprocessor.transform(rows)
    X = matrix(x_cat, x_num)
    got = native.predict(X, raw_score=True) if family == "lightgbm" else native.inplace_predict(
        X, predict_type="margin")
    np.testing.assert_array_equal(np.asarray(got, dtype=np.float64),
                                  family_of(family).predict(bundle.model, x_cat, x_num))
    assert pip_requirements(family)[0].startswith(f"{family}==") and not any(
        r.startswith("torch") for r in pip_requirements(family))
    pd.testing.assert_frame_equal(mlflow.pyfunc.load_model(pyfunc_uri).predict(rows), served(bundle, rows))


def test_the_tree_training_process_imports_no_torch(tmp_path) -> None:
    job = tree_job(tmp_path, tree_config("lightgbm", {"rounds": 5}), "run")
    code = ("import sys\nfrom mlassets.core.train.entry import main\n"
            f"main(['--job', {str(job)!r}])\nassert 'torch' not in sys.modules, 'torch was imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["steps"] == 5
