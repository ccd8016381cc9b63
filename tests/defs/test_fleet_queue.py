"""The job spec travels as Dagster run tags and into MLflow; the team limits render into a dagster.yaml that a
Dagster instance reads back as its run queue's limits."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import dagster as dg
import yaml

from mlassets.core.config import load_config, parse_config
from mlassets.core.config.job import FleetJobConfig
from mlassets.core.config.load import shipped_configs
from mlassets.core.fleet.config import SHIPPED, load_fleet
from mlassets.core.fleet.spec import from_tags, job_spec
from mlassets.defs import lookup
from mlassets.defs.fleet.admission import admit_requests
from mlassets.defs.fleet.runs import fleet_run_tags, queue_config


def test_a_run_carries_its_spec_and_priority_and_mlflow_records_them() -> None:
    data = load_config(shipped_configs()["flights"]).to_dict()
    data["fleet"] = {"team": "research", "priority": "urgent", "expected_minutes": 30.0}
    cfg = parse_config(data)
    tags = fleet_run_tags(cfg, load_fleet(SHIPPED))
    assert tags["dagster/priority"] == "1000" and tags["mlassets/team"] == "research"
    assert from_tags(tags) == job_spec(cfg)
    run = dg.DagsterRun(job_name="flights_pipeline", run_id="r-1", tags={**tags, "other": "x"})
    recorded = lookup.tags_for_dagster_run(run)
    assert recorded["mlassets/fleet.priority"] == "urgent" and recorded["dagster/priority"] == "1000"
    assert "other" not in recorded


def test_a_config_without_a_fleet_section_makes_no_fleet_job() -> None:
    """A CPU demo's runs carry no ``mlassets/fleet.*`` tags (nothing to admit, charge or list on the fleet page);
    its config hashes as it did when the section's defaults were always filled in."""
    cfg = load_config(shipped_configs()["flights"])
    assert cfg.fleet is None and fleet_run_tags(cfg, load_fleet(SHIPPED)) == {}
    assert admit_requests(None, cfg, 2) == ["", ""]  # a sensor's requests: admitted without reading any run
    data = cfg.to_dict()
    data["fleet"] = dataclasses.asdict(FleetJobConfig())
    declared = parse_config(data)
    assert declared.config_hash() == cfg.config_hash() and fleet_run_tags(declared, load_fleet(SHIPPED))
    assert job_spec(cfg) == job_spec(declared)  # `mlassets fleet submit` of such a config: the defaults


def test_the_team_limits_are_what_a_dagster_instance_reads(tmp_path: Path) -> None:
    fleet = load_fleet(SHIPPED)
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump({
        "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"},
        **queue_config(fleet)}))
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    finally:
        instance.dispose()
    assert {(d["value"], d["limit"]) for d in limits} == {(t, s.gpu_quota) for t, s in fleet.teams.items()}
