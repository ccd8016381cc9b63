"""The ``tuned_hparams`` asset, its job and schedule, and training with the tuned values."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import dagster as dg
import mlflow
import pyarrow as pa
import pytest
from mlflow import MlflowClient

from mlassets.core import paths, tracking
from mlassets.core.config import parse_config
from mlassets.core.data.raw import raw_repo
from mlassets.core.data.store import open_store
from mlassets.core.features import store as feature_store
from mlassets.core.features.store import FeatureSet
from mlassets.core.records import RecordFiles
from mlassets.core.train import launch
from mlassets.core.train.result import Candidate
from mlassets.core.train.synthetic import flights_like, tiny_config, write_splits
from mlassets.core.tune.record import TunedHparams, newest
from mlassets.core.tune.space import with_values
from mlassets.defs import training, tuning
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions
from mlassets.defs.resources import default_resources

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")

OLD, NEW = "a" * 40, "b" * 40


def _config(**tuning_: object):
    data = tiny_config(epochs=2, batch_size=256)
    data["tuning"].update({"params": ["lr", "dropout"], "trials": 5, "seed": 1, **tuning_})
    return parse_config(data)


def _instance(cfg, versions: list[str]) -> dg.DagsterInstance:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(data_versions(cfg).name, versions)
    return instance


@pytest.mark.e2e
def test_the_asset_tunes_the_newest_version_or_the_chosen_one(home: str, monkeypatch) -> None:
    read: list[tuple[str, str]] = []

    def split_tables(store, cfg, version: str, split: str) -> Iterator[pa.Table]:
        read.append((version, split))
        assert split != "holdout", "the study read the holdout"
        frame = flights_like(1200 if split == "train" else 300, 0 if split == "train" else 1)
        yield pa.Table.from_pandas(frame, preserve_index=False)

    monkeypatch.setattr(feature_store, "split_tables", split_tables)
    cfg = _config()
    keys, instance = DatasetKeys.of(cfg), _instance(cfg, [OLD, NEW])
    assets = [*tuning.build(cfg, keys), dg.AssetSpec(keys.features, partitions_def=data_versions(cfg))]
    result = dg.materialize(assets, instance=instance, resources=default_resources(), selection=[keys.tuned_hparams])
    assert result.success and read == [(NEW, "train"), (NEW, "validation")]
    tuned = newest(keys.tuned_hparams.path)  # the record training reads
    assert isinstance(tuned, TunedHparams) and tuned.data_version == NEW and tuned.trials_run == 5
    meta = result.asset_materializations_for_node("flights__tuned_hparams")[0].metadata
    assert meta["best_val_mae"].value == pytest.approx(tuned.best_value, rel=1e-3)  # rounded for people
    assert meta["best_lr"].value == pytest.approx(tuned.values["lr"], rel=1e-3) and "best_dropout" in meta
    assert (meta["trials_complete"].value, meta["trials_pruned"].value) == (tuned.trials_complete, tuned.trials_pruned)
    table = meta["trials"].value.records
    assert [r.data["state"] for r in table] == [t.state for t in tuned.trials]
    assert {"number", "state", "val_mae", "last", "epochs", "lr", "dropout"} == set(table[0].data)
    assert [r.data["lr"] for r in table] == pytest.approx([t.values["lr"] for t in tuned.trials], rel=1e-3)
    tracking.configure()
    parent = mlflow.get_run(tuned.mlflow_run_id)  # the study's parent is the Dagster run's MLflow run
    assert parent.data.tags["dagster_run_id"] == result.run_id and parent.info.status == "FINISHED"
    children = MlflowClient().search_runs([parent.info.experiment_id],
                                          filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert len(children) == 5

    read.clear()
    chosen = {"ops": {"flights__tuned_hparams": {"config": {"data_version": OLD, "trials": 2}}}}
    result = dg.materialize(assets, instance=instance, resources=default_resources(), selection=[keys.tuned_hparams],
                            run_config=chosen)
    assert result.success and read == [(OLD, "train"), (OLD, "validation")]
    older = newest(keys.tuned_hparams.path)
    assert older.data_version == OLD and older.study_name != tuned.study_name and len(older.trials) == 2


def test_the_version_is_the_chosen_one_or_the_newest_and_named_when_unknown() -> None:
    assert tuning.chosen_version([OLD, NEW], "", "flights") == NEW
    assert tuning.chosen_version([OLD, NEW], OLD, "flights") == OLD
    with pytest.raises(ValueError, match=r"data_version 'c+' is not a data version of flights \(2 known\)"):
        tuning.chosen_version([OLD, NEW], "c" * 40, "flights")
    with pytest.raises(ValueError, match="flights has no data version yet"):
        tuning.chosen_version([], "", "flights")


def test_the_tune_job_and_its_schedule() -> None:
    cfg = _config()
    keys = DatasetKeys.of(cfg)
    assert tuning.automation(cfg, keys) == []  # on demand only
    (job,) = tuning.jobs(cfg, keys)
    assert job.name == "flights_tune" and job.executor_def == dg.in_process_executor
    data = tiny_config()
    data["tuning"]["schedule"] = "0 4 * * 0"
    data["automation"]["timezone"] = "Europe/Berlin"
    cfg = parse_config(data)
    (schedule,) = tuning.automation(cfg, keys)
    assert isinstance(schedule, dg.ScheduleDefinition) and schedule.job_name == "flights_tune"
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 4 * * 0", "Europe/Berlin")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    when = datetime.datetime(2026, 1, 4, 4, tzinfo=datetime.UTC)
    with dg.instance_for_test() as instance:
        skipped = schedule(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
        assert isinstance(skipped, dg.SkipReason) and "no data version yet" in skipped.skip_message
        instance.add_dynamic_partitions(data_versions(cfg).name, [NEW])
        request = schedule(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
        assert isinstance(request, dg.RunRequest) and request.run_key == f"tune:{when.isoformat()}"


@pytest.mark.e2e
def test_training_trains_with_and_records_the_newest_tuned_values(home: str, monkeypatch) -> None:
    monkeypatch.setattr(launch, "export_splits", lambda store, cfg, version, directory, splits: dict(
        zip(("train", "validation"), write_splits(directory, 600, 200), strict=True)))
    cfg = _config(apply=True)
    keys = DatasetKeys.of(cfg)
    store = open_store()
    store.create_repo(raw_repo(cfg), default_branch="main")
    version = store.commit(raw_repo(cfg), "main", {"raw/flights/2013-01.parquet": b"synthetic"}, "x").id
    files = RecordFiles(paths.records_root())
    files.write(keys.features.path, version, FeatureSet(data_version=version, commit="s", rows={}, manifest_uri="s"))
    files.write(keys.tuned_hparams.path, None, TunedHparams(
        dataset="flights", study_name="s", storage_kind="sqlite", storage="sqlite:///o.db", data_version=OLD,
        config_hash="h", params=["lr", "dropout", "weight_decay"], values={"lr": 0.0123, "dropout": 0.125,
                                                                          "weight_decay": 0.5},
        metric="mae", best_value=1.0, best_trial=0, trials_complete=1, trials_pruned=0, trials_failed=0,
        trials_run=1, mlflow_run_id="r", seconds=1.0, created_at="2026-01-01T00:00:00+00:00"))
    versions = data_versions(cfg)
    assets = [*training.build(cfg, keys), dg.AssetSpec(keys.features, partitions_def=versions)]
    result = dg.materialize(assets, partition_key=version, instance=_instance(cfg, [version]),
                            resources=default_resources())
    assert result.success
    candidate = files.read(keys.candidate_model.path, version, Candidate)
    effective = with_values(cfg, {"lr": 0.0123, "dropout": 0.125})  # weight_decay is not searched: pinned
    assert candidate.provenance.config_hash == effective.config_hash() != cfg.config_hash()
    tracking.configure()
    recorded = mlflow.artifacts.load_dict(f"runs:/{candidate.provenance.mlflow_run_id}/{tracking.CONFIG_ARTIFACT}")
    assert (recorded["training"]["lr"], recorded["model"]["dropout"]) == (0.0123, 0.125)  # what a rebuild trains
    assert recorded["training"]["weight_decay"] == cfg.training.weight_decay
