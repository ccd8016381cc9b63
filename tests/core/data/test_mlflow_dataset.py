"""The training run's dataset input names the store commit it trained on (real sqlite MLflow store)."""

from __future__ import annotations

import json

import mlflow
import pytest

from mlassets.core import tracking
from mlassets.core.config import PipelineConfig, load_config, shipped_configs
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.mlflow_dataset import DIGEST_CHARS, digest_of, log_data_version
from mlassets.core.data.store import open_store


@pytest.fixture
def cfg() -> PipelineConfig:
    return load_config(shipped_configs()["orders"])


def test_logged_input_names_the_data_commit(home: str, cfg: PipelineConfig) -> None:
    store = open_store()
    commit = ingest_partition(store, cfg, "2024-W01").data_version
    assert len(commit) == 64 and DIGEST_CHARS == 36
    tracking.configure()
    with mlflow.start_run() as run:
        log_data_version(cfg, commit, {"train": 2000, "validation": 500}, store)

    inputs = mlflow.MlflowClient().get_run(run.info.run_id).inputs.dataset_inputs
    assert len(inputs) == 1
    dataset, tags = inputs[0].dataset, {t.key: t.value for t in inputs[0].tags}
    assert dataset.digest == commit[:36] == digest_of(commit)  # MLflow's limit is 36 characters
    assert tags["data_commit"] == commit  # the full id
    assert tags["mlflow.data.context"] == "training"
    assert (tags["rows_train"], tags["rows_validation"], tags["dataset"]) == ("2000", "500", "orders")
    assert dataset.name == f"orders@{commit[:12]}" and dataset.source_type == "versioned_store"
    assert json.loads(dataset.source) == {"uri": f"local://orders/{commit}"} == {"uri": tags["store_uri"]}
    assert mlflow.get_experiment(run.info.experiment_id).name == tracking.EXPERIMENT

    with mlflow.start_run() as run:  # without a store, the URI names repository and commit
        log_data_version(cfg, "a" * 64, 1234)
    (data_input,) = mlflow.MlflowClient().get_run(run.info.run_id).inputs.dataset_inputs
    tags = {t.key: t.value for t in data_input.tags}
    assert tags["rows"] == "1234" and tags["store_uri"] == f"orders@{'a' * 64}"
    assert data_input.dataset.digest == "a" * 36
