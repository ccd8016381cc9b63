"""Training subprocess: learns a synthetic signal, is bit-reproducible, CLI and Pipes entry points work."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mlassets.core.config import CONFIG_DIR, parse_config
from mlassets.core.train.artifact import load_bundle
from mlassets.core.train.job import TrainJob
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.result import TrainingResult
from mlassets.core.train.synthetic import flights_like
from mlassets.core.train.torch_run import loop
from mlassets.core.train.torch_run.process import run_training

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")

REPO = Path(__file__).resolve().parents[3]


def _config(**features: object) -> dict:
    data = yaml.safe_load((CONFIG_DIR / "flights.yaml").read_text())
    data["features"].update(features)
    data["model"].update({"embedding_dim": 4, "hidden": [16, 8]})
    data["training"].update({"epochs": 3, "batch_size": 128, "lr": 0.01, "threads": 1})
    return parse_config(data).to_dict()


def _frame(n: int, seed: int) -> pd.DataFrame:
    return flights_like(n, seed)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("data")
    _frame(3000, 0).to_parquet(root / "train.parquet")
    _frame(1000, 1).to_parquet(root / "validation.parquet")
    return root / "train.parquet", root / "validation.parquet"


def _job(data: tuple[Path, Path], out_dir: Path, config: dict | None = None) -> TrainJob:
    return TrainJob(config=config or _config(), train_path=str(data[0]), validation_path=str(data[1]),
                    out_dir=str(out_dir), data_version="v-test")


@pytest.fixture(scope="module")
def trained(data: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[TrainJob, TrainingResult]:
    job = _job(data, tmp_path_factory.mktemp("run1"))
    return job, run_training(job, PrintReporter())


def test_training_beats_median_baseline(data: tuple[Path, Path], trained: tuple[TrainJob, TrainingResult]) -> None:
    job, result = trained
    train, val = pd.read_parquet(data[0]), pd.read_parquet(data[1])
    naive = float(np.mean(np.abs(val["arr_delay"] - train["arr_delay"].median())))
    print(f"train_seconds={result.train_seconds} val_mae={result.val_metric:.3f} naive={naive:.3f}")
    assert result.val_metric < 0.6 * naive and (result.task, result.val_metric_name) == ("regression", "mae")
    assert [c["epoch"] for c in result.curves] == [1, 2, 3]
    best = min(result.curves, key=lambda c: c["val_metric"])
    assert (result.best_epoch, result.val_metric) == (best["epoch"], best["val_metric"])
    assert result.n_train == 3000 and result.n_val == 1000 and result.environment.world_size == 1
    assert result.data_version == "v-test"
    assert read_outcome(job.out_dir).result == result  # the launcher's one way to learn of it
    bundle = load_bundle(Path(job.out_dir) / "model")  # the bundle holds the best epoch's weights
    pred = bundle.predict(val)
    assert float(np.mean(np.abs(pred - val["arr_delay"]))) == pytest.approx(result.val_metric, rel=1e-6)
    assert bundle.meta["data_version"] == "v-test"


def test_validation_in_chunks_is_the_whole_splits_metric(data: tuple[Path, Path], tmp_path: Path, monkeypatch) -> None:
    """The streaming loader's run validated 37 rows a forward pass: the metric is the bundle's MAE over every row."""
    monkeypatch.setattr(loop, "EVAL_BATCH", 37)
    config = _config()
    config["training"].update(loader="stream", epochs=1)
    result = run_training(_job(data, tmp_path / "run", config), PrintReporter())
    val = pd.read_parquet(data[1])
    pred = load_bundle(tmp_path / "run" / "model").predict(val)
    assert result.n_val == len(val) == 1000
    assert float(np.mean(np.abs(pred - val["arr_delay"]))) == pytest.approx(result.val_metric, rel=1e-6)


def test_two_runs_give_identical_weights(data: tuple[Path, Path], trained: tuple[TrainJob, TrainingResult],
                                         tmp_path: Path) -> None:
    again = run_training(_job(data, tmp_path), PrintReporter())
    assert again.weights_sha256 == trained[1].weights_sha256
    assert again.curves == trained[1].curves


def _cli(job_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    env = {**base, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "mlassets.core.train", "--job", str(job_path)],
                          capture_output=True, text=True, env=env, timeout=120, cwd=job_path.parent)


@pytest.mark.e2e  # processes: in `make test`, not `make test-fast`
def test_cli_writes_result_and_model(data: tuple[Path, Path], trained: tuple[TrainJob, TrainingResult],
                                     tmp_path: Path) -> None:
    job_path = _job(data, tmp_path / "out").to_json(tmp_path / "job.json")
    proc = _cli(job_path)
    assert proc.returncode == 0, proc.stderr
    assert "epoch 3/3" in proc.stderr
    result = read_outcome(tmp_path / "out").result
    assert result.weights_sha256 == trained[1].weights_sha256  # same bits across processes
    assert sorted(p.name for p in (tmp_path / "out" / "model").iterdir()) == [
        "MANIFEST.json", "bundle.json", "weights.pt"]


@pytest.mark.e2e  # processes: in `make test`, not `make test-fast`
def test_cli_reports_through_dagster_pipes(data: tuple[Path, Path], tmp_path: Path) -> None:
    def encode(value: dict) -> str:
        return base64.b64encode(zlib.compress(json.dumps(value).encode())).decode()

    context = {"asset_keys": ["model"], "code_version_by_asset_key": None, "provenance_by_asset_key": None,
               "partition_key": None, "partition_key_range": None, "partition_time_window": None,
               "run_id": "r1", "job_name": None, "retry_number": 0, "extras": {}}
    messages = tmp_path / "messages.jsonl"
    job_path = _job(data, tmp_path / "out").to_json(tmp_path / "job.json")
    proc = _cli(job_path, {"DAGSTER_PIPES_CONTEXT": encode({"data": context}),
                           "DAGSTER_PIPES_MESSAGES": encode({"path": str(messages)})})
    assert proc.returncode == 0, proc.stderr
    sent = [json.loads(line) for line in messages.read_text().splitlines()]
    logs = [m["params"]["message"] for m in sent if m["method"] == "log"]
    assert any("epoch 3/3" in line for line in logs)
    # one path for the result: the file (Pipes carries logs, not a second copy of the result)
    assert not [m for m in sent if m["method"] == "report_asset_materialization"]
    result = read_outcome(tmp_path / "out").result
    assert any(str(tmp_path / "out" / "result.json") in line for line in logs)
    assert result.telemetry["steps"] == result.steps == 3 * 24  # 3 epochs of ceil(3000 / 128)


def test_missing_feature_column_is_named(data: tuple[Path, Path], tmp_path: Path) -> None:
    config = _config(numeric=["distance", "temp", "cloud_cover"])
    with pytest.raises(ValueError, match="'cloud_cover'"):
        run_training(_job(data, tmp_path, config), PrintReporter())
    proc = _cli(_job(data, tmp_path / "out", config).to_json(tmp_path / "job.json"))
    assert proc.returncode == 2 and "'cloud_cover'" in proc.stderr


def test_empty_training_data_is_rejected(data: tuple[Path, Path], tmp_path: Path) -> None:
    empty = tmp_path / "empty.parquet"
    pd.read_parquet(data[0]).iloc[:0].to_parquet(empty)
    with pytest.raises(ValueError, match="training data is empty"):
        run_training(_job((empty, data[1]), tmp_path), PrintReporter())


@pytest.mark.e2e  # processes: in `make test`, not `make test-fast`
def test_cli_takes_a_config_file_instead_of_a_job(data: tuple[Path, Path], tmp_path: Path) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    command = [sys.executable, "-m", "mlassets.core.train", "--config", str(CONFIG_DIR / "flights.yaml"),
               "--train", str(data[0]), "--validation", str(data[1]), "--out", str(tmp_path / "out")]
    proc = subprocess.run(command, capture_output=True, text=True, env={**base, "PYTHONPATH": str(REPO)},
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = read_outcome(tmp_path / "out").result
    assert result.data_version == "local" and [c["epoch"] for c in result.curves] == [1, 2, 3, 4]
    assert result.checkpoints[-1]["name"] == f"step-{result.steps:09d}"
    proc = subprocess.run(command[:5], capture_output=True, text=True, env={**base, "PYTHONPATH": str(REPO)},
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and "give --job, or all of --config" in proc.stderr
