"""The training step through Dagster Pipes with torchrun: two ranks, a Dagster retry that resumes, a dead rank."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import mlflow
import pytest

from mlassets.core import paths, tracking
from mlassets.core.config import parse_config
from mlassets.core.data.raw import derived_repo, raw_repo
from mlassets.core.data.store import open_store
from mlassets.core.features.store import FeatureSet
from mlassets.core.records import RecordFiles
from mlassets.core.train import launch as candidates
from mlassets.core.train.result import Candidate
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.defs import training
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.resources import default_resources

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore:torch.distributed is disabled")]


def _synthetic_splits(store, cfg, data_version: str, directory: Path, splits: tuple[str, ...]) -> dict[str, Path]:
    """Stands in for the feature store's export: the splits of a synthetic data version."""
    assert splits == ("train", "validation")
    train, val = write_splits(directory, 1000, 300)
    return {"train": train, "validation": val}


def _materialize(key: str = "", **train: object) -> tuple[dg.ExecuteInProcessResult, dg.DagsterInstance, str]:
    """Materialize the training step for a data version (a raw commit) whose features are synthetic."""
    cfg = parse_config(tiny_config(nproc=2, epochs=2, checkpoint_every_steps=4, telemetry_every_steps=4, **train))
    store = open_store()
    store.create_repo(raw_repo(cfg), default_branch="main")
    version = key or store.commit(raw_repo(cfg), "main", {"raw/flights/2013-01.parquet": b"synthetic"}, "x").id
    instance = dg.DagsterInstance.ephemeral()
    versions = dg.DynamicPartitionsDefinition(name=f"{cfg.dataset.name}_data_versions")
    instance.add_dynamic_partitions(versions.name, [version])
    keys = DatasetKeys.of(cfg)
    features = FeatureSet(data_version=version, commit="synthetic", rows={"train": 1000, "validation": 300},
                          manifest_uri="synthetic")  # the upstream record, built by hand
    if not key:
        RecordFiles(paths.records_root()).write(keys.features.path, version, features)
    assets = [*training.build(cfg, keys), dg.SourceAsset(keys.features, partitions_def=versions)]
    result = dg.materialize(assets, partition_key=version, instance=instance, resources=default_resources(),
                            raise_on_error=False)
    return result, instance, version


def _events(result: dg.ExecuteInProcessResult, kind: str) -> list[dg.DagsterEvent]:
    return [e for e in result.all_events if e.event_type_value == kind]


@pytest.fixture(autouse=True)
def _features(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(candidates, "export_splits", _synthetic_splits)
    yield
    assert mlflow.active_run() is None  # the resource ended the run with the Dagster run


def test_two_ranks_through_pipes_crash_retry_resume(home: str) -> None:
    result, _, version = _materialize(retries=1, faults={"crash_at_step": 12, "crash_rank": 0})
    assert result.success
    assert len(_events(result, "STEP_UP_FOR_RETRY")) == 1  # the crash; the retry resumed and finished
    mats = {m.asset_key.to_user_string(): m.metadata for m in result.asset_materializations_for_node(
        "flights__candidate_model")}
    ckpt, model = mats["flights/checkpoints"], mats["flights/candidate_model"]
    listed = ckpt["checkpoints"].value
    assert [c["name"] for c in listed][-1] == "step-000000016" and "final" in listed[-1]["kept_as"]
    assert any("best" in c["kept_as"] for c in listed)
    assert ckpt["attempt"].value == 2 and ckpt["resumed_from_step"].value == 8
    store = open_store()
    committed = store.list_objects(derived_repo(parse_config(tiny_config())), ckpt["store_commit"].value,
                                   prefix=f"checkpoints/{version}/")
    assert any(p.endswith("/final/MANIFEST.json") for p in committed)
    assert any(p.endswith("/best/.metadata") for p in committed)
    candidate = RecordFiles(paths.records_root()).read(["flights", "candidate_model"], version, Candidate)
    result_ = candidate.training  # the record the evaluation receives
    assert result_.environment.world_size == 2 and result_.checkpoint_names() == [c["name"] for c in listed]
    assert (result_.attempt, result_.resumed_from_step) == (2, 8)
    assert candidate.provenance.data_commit == version and candidate.provenance.store_backend == "local"
    assert 0.9 <= result_.telemetry["share_covered"] <= 1.0 and model["telemetry_median_step_ms"].value > 0
    assert model["checkpoints"].value == result_.checkpoint_names()
    tracking.configure()
    logged = mlflow.get_run(candidate.provenance.mlflow_run_id).data.metrics
    assert {"train_loss", "val_mae", "best_val_mae", "telemetry/median_step_ms"} <= set(logged)


def test_a_dead_rank_fails_the_step_within_the_collective_timeout(home: str) -> None:
    result, instance, _ = _materialize(retries=0, collective_timeout_s=3,
                                    faults={"slow_rank": 1, "slow_rank_ms": 600_000})
    assert not result.success
    (start,) = _events(result, "STEP_START")
    (failure,) = _events(result, "STEP_FAILURE")
    logs = instance.all_logs(result.run_id)
    stamps = {r.dagster_event.event_type_value: r.timestamp for r in logs
              if r.dagster_event is not None and r.dagster_event.event_type_value in ("STEP_START", "STEP_FAILURE")}
    (training_started,) = [r.timestamp for r in logs if "training on 1000 rows" in (r.user_message or "")]
    assert stamps["STEP_FAILURE"] - training_started < 3 + 30  # the timeout, plus torchrun tearing down
    assert stamps["STEP_FAILURE"] - stamps["STEP_START"] < 120  # the stuck rank would sleep for 10 minutes
    assert start.step_key == failure.step_key == "flights__candidate_model"


def test_a_partition_key_that_is_not_a_data_version_creates_nothing(home: str, tmp_path) -> None:
    """A dynamic partition such as ``../../../x`` is refused before anything is made on disk."""
    key = "../../../../escape"
    result, _, _ = _materialize(key=key)
    assert not result.success
    (failure,) = _events(result, "STEP_FAILURE")
    assert "escape" in failure.step_failure_data.error.cause.message  # the key is named
    base = Path(home).resolve()
    assert not [p for p in base.parents[1].rglob("escape")]  # nothing under the test's folders ...
    assert not (base / "work").exists()  # ... and no working area at all
