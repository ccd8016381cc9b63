"""A scheduled warm start through the pipeline: the candidate begins from the champion's weights, its registry
record says which version, and the rebuild (which starts from that version's registered bundle too) is
identical."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlassets.core import tracking
from mlassets.core.config import load_config
from mlassets.core.registry import versions
from mlassets.core.registry.rebuild import rebuild
from mlassets.defs.jobs import RETRAIN_TAG, TRIGGER_TAG, pipeline_job_name
from mlassets.examples.sales import write_example
from mlassets.host.instance import get_instance
from mlassets.host.runs import execute, ingest, register, run_pipeline

pytestmark = pytest.mark.e2e


def test_a_warm_started_candidate_records_its_start_and_rebuilds_identically(home: str, tmp_path: Path) -> None:
    cfg = load_config(write_example(tmp_path / "sales", months=2))
    instance = get_instance()
    first = ingest(instance, cfg, "2024-01").key
    assert run_pipeline(instance, cfg, first).success
    ingested = ingest(instance, cfg, "2024-02")
    second = ingested.data_version
    register(cfg)
    run = execute(instance, pipeline_job_name(cfg), ingested.key,
                  tags={TRIGGER_TAG: "schedule", RETRAIN_TAG: "warm_start"})
    assert run.success, run.failure
    tracking.configure()
    record = versions.record_of(versions.get_version("sales_units", "2"))
    assert record.warm_start_from == "1" and record.data_commit == second
    assert versions.record_of(versions.get_version("sales_units", "1")).warm_start_from == ""
    assert record.owners == ["team:ml"]  # the model version records its owners
    report = rebuild("sales_units", "2")
    assert report.identical and report.weights_match, report.lines()
