"""A binary task (orders_late): BCE on logits, log loss as the validation metric, probabilities from the bundle."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig, load_config, shipped_configs
from mlassets.core.data.raw import partition_tables
from mlassets.core.evaluate.calibration import binary_metrics
from mlassets.core.features.split import prepare_features
from mlassets.core.train.artifact import BUNDLE, load_bundle, save_bundle
from mlassets.core.train.job import TrainJob
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.torch_run.process import run_training

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
WEEKS = ("2024-W01", "2024-W02", "2024-W03")  # train, validation, holdout (7 days each)


def _cfg(**training: object) -> PipelineConfig:
    cfg = load_config(shipped_configs()["orders_late"])
    return dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, threads=1, **training))


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    cfg = _cfg()
    tables: dict[str, list[pd.DataFrame]] = {}
    for week in WEEKS:
        for name, frame in partition_tables(cfg, week).items():
            tables.setdefault(name, []).append(frame)
    parts = prepare_features({k: pd.concat(v, ignore_index=True) for k, v in tables.items()}, cfg)
    root = tmp_path_factory.mktemp("orders-late")
    paths = {}
    for name, part in parts.items():
        part.to_parquet(root / f"{name}.parquet")
        paths[name] = root / f"{name}.parquet"
    return paths


def _job(splits: dict[str, Path], out: Path, cfg: PipelineConfig | None = None,
         train: Path | None = None) -> TrainJob:
    return TrainJob((cfg or _cfg()).to_dict(), str(train or splits["train"]), str(splits["validation"]), str(out),
                    "v-binary")


@pytest.fixture(scope="module")
def trained(splits: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("run")
    return out, run_training(_job(splits, out), PrintReporter())


def _logloss(y: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))))


def test_binary_training_beats_the_base_rate_and_reports_log_loss(splits, trained) -> None:
    out, result = trained
    assert (result.task, result.val_metric_name) == ("binary", "logloss")
    train, val = pd.read_parquet(splits["train"]), pd.read_parquet(splits["validation"])
    y = val["late"].to_numpy(dtype=float)
    base = _logloss(y, np.full(len(y), train["late"].mean()))
    print(f"val logloss {result.val_metric:.4f}, base rate {base:.4f}")
    assert result.val_metric < 0.9 * base
    assert [c["epoch"] for c in result.curves] == [1, 2, 3, 4]
    assert result.val_metric == min(c["val_metric"] for c in result.curves)


def test_the_bundle_gives_probabilities_that_score_as_in_training(splits, trained) -> None:
    out, result = trained
    bundle = load_bundle(out / "model")
    assert bundle.task == "binary" and json.loads((out / "model" / BUNDLE).read_text())["task"] == "binary"
    assert (bundle.target_center, bundle.target_scale) == (0.0, 1.0)
    val = pd.read_parquet(splits["validation"])
    prob = bundle.predict(val)
    assert prob.dtype == np.float64 and ((prob > 0) & (prob < 1)).all()
    y = val["late"].to_numpy(dtype=float)
    assert _logloss(y, prob) == pytest.approx(result.val_metric, rel=1e-6)
    holdout = pd.read_parquet(splits["holdout"])
    metrics = binary_metrics(holdout["late"], bundle.predict(holdout))
    print(f"holdout: {metrics}")
    assert metrics["ece"] < 0.1  # BCE on logits: roughly calibrated on an unseen week (10 bins, ~3000 rows)
    assert abs(metrics["mean_predicted"] - metrics["positive_rate"]) < 0.03


def test_a_bundle_without_a_task_is_a_regression_bundle(trained, tmp_path: Path) -> None:
    out, _ = trained
    bundle = load_bundle(out / "model")
    bundle.task = "regression"
    saved = save_bundle(bundle, tmp_path / "model")
    doc = json.loads((saved / BUNDLE).read_text())
    assert doc["task"] == "regression"
    assert load_bundle(saved).task == "regression"


def test_targets_other_than_0_and_1_are_refused(splits, tmp_path: Path) -> None:
    train = pd.read_parquet(splits["train"])
    train.loc[17, "late"] = 2
    bad = tmp_path / "train.parquet"
    train.to_parquet(bad)
    with pytest.raises(ValueError, match=r"dataset.target 'late' of a binary task must be 0 or 1: training row 17 "
                                         r"has 2.0 \(1 such rows\)"):
        run_training(_job(splits, tmp_path / "run", train=bad), PrintReporter())
    assert not (tmp_path / "run" / "model").exists()


@pytest.mark.parametrize(("dataset", "loss", "message"), [
    ("orders_late", "l1", "training.loss: 'l1' does not fit dataset.task 'binary'; use bce"),
    ("orders", "bce", "training.loss: 'bce' does not fit dataset.task 'regression'; use l1, mse, huber"),
])
def test_a_loss_that_does_not_fit_the_task_is_refused(splits, tmp_path: Path, dataset: str, loss: str,
                                                       message: str) -> None:
    cfg = load_config(shipped_configs()[dataset])
    cfg = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, loss=loss))
    with pytest.raises(ValueError, match=message):
        run_training(_job(splits, tmp_path / "run", cfg), PrintReporter())
