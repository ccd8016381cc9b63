"""One data version, one candidate per config and code from any door (issue 33, case 4, the doors that bypass
``mlassets run``): the job launched again through Dagster's own API (as the UI's Launch run does, with nothing but
the partition tag), a materialization of the registry assets alone, and two launches at once. Each ends without
a second model version or promotion, saying which version exists; the run tag ``mlassets/again`` retrains, and
its version says it was a deliberate retrain."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import mlflow
import pytest
from dagster._core.definitions.reconstruct import ReconstructableRepository

from mlassets.core import tracking
from mlassets.core.config import PipelineConfig, load_config
from mlassets.core.registry.made import AGAIN_TAG, RETRAIN_OF_TAG
from mlassets.core.registry.promotion import PromotionLog
from mlassets.defs.jobs import STOPPED_TAG, pipeline_job_name
from mlassets.defs.keys import DatasetKeys
from mlassets.examples.sales import write_example
from mlassets.host.code_server import LOCATION
from mlassets.host.instance import get_instance
from mlassets.host.run_origin import job_origin
from mlassets.host.runs import REPOSITORY, ingest, register

pytestmark = pytest.mark.e2e


def _launch(instance: dg.DagsterInstance, cfg: PipelineConfig, key: str, tags: dict[str, str] | None = None,
            assets: list[dg.AssetKey] | None = None) -> dg.DagsterRun:
    """The pipeline job of ``key`` through Dagster's ``execute_job`` (no mlassets launch code, no mlassets tag)."""
    recon = ReconstructableRepository.for_module("mlassets.definitions", "defs").get_reconstructable_job(
        pipeline_job_name(cfg))
    with dg.execute_job(recon, instance, tags={"dagster/partition": key, **(tags or {})},
                        asset_selection=assets) as result:
        assert result.success, result.all_events
        run = instance.get_run_by_id(result.run_id)
        assert run is not None
        return run


def _versions(name: str) -> list[int]:
    tracking.configure()
    return sorted(int(v.version) for v in mlflow.MlflowClient().search_model_versions(f"name = '{name}'"))


def test_a_version_launched_again_from_dagster_makes_no_second_candidate(home: str, tmp_path: Path) -> None:
    cfg = load_config(write_example(tmp_path / "sales", months=1))
    instance, keys, name = get_instance(), DatasetKeys.of(cfg), cfg.model.registered_name
    key = ingest(instance, cfg, "2024-01").key
    register(cfg)
    first = _launch(instance, cfg, key)
    assert STOPPED_TAG not in first.tags and _versions(name) == [1]

    second = _launch(instance, cfg, key)  # the UI's "Launch run" of the same partition
    assert _versions(name) == [1]
    said = second.tags[STOPPED_TAG]
    assert f"was trained with this config and code already: model {name} v1 (Dagster run {first.run_id})" in said
    assert "nothing trained" in said and AGAIN_TAG in said
    assert not instance.get_records_for_run(second.run_id, of_type=dg.DagsterEventType.STEP_FAILURE).records
    materialized = {r.event_log_entry.dagster_event.asset_key for r in instance.get_records_for_run(
        second.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records}
    assert keys.candidate_model not in materialized and keys.registered_model not in materialized

    third = _launch(instance, cfg, key, assets=[keys.registered_model, keys.champion])  # the registry alone
    assert "v1" in third.tags[STOPPED_TAG] and "nothing registered" in third.tags[STOPPED_TAG]

    assert _versions(name) == [1]
    assert [e.to_version for e in PromotionLog().entries(name) if e.applied] == ["1"]

    again = _launch(instance, cfg, key, tags={AGAIN_TAG: "retrain of v1"})  # a deliberate retrain
    assert STOPPED_TAG not in again.tags
    assert _versions(name) == [1, 2]
    newest = mlflow.MlflowClient().get_model_version(name, "2")
    assert newest.tags[RETRAIN_OF_TAG] == "retrain of v1" and newest.tags["dagster_run_id"] == again.run_id


def test_of_two_launches_at_once_the_later_trains_nothing(home: str, tmp_path: Path) -> None:
    """A run of the version launched earlier and still in progress (queued, or training) stops the later one."""
    cfg = load_config(write_example(tmp_path / "sales", months=1))
    instance, name = get_instance(), cfg.model.registered_name
    key = ingest(instance, cfg, "2024-01").key
    register(cfg)
    recon = ReconstructableRepository.for_module("mlassets.definitions", "defs").get_reconstructable_job(
        pipeline_job_name(cfg))
    earlier = instance.create_run_for_job(job_def=recon.get_definition(), tags={"dagster/partition": key},
                                          job_code_origin=recon.get_python_origin(),
                                          remote_job_origin=job_origin(LOCATION, REPOSITORY, pipeline_job_name(cfg)),
                                          status=dg.DagsterRunStatus.QUEUED)  # launched from the UI, queued
    later = _launch(instance, cfg, key)
    assert f"run {earlier.run_id} is training data version {key}" in later.tags[STOPPED_TAG]
    assert _versions(name) == []
