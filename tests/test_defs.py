"""Snapshot of the asset graph: any change to keys, groups, partitions, checks or jobs shows in review."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import dagster as dg
import pytest
import yaml

from mlassets.core.config import CONFIGS_ENV, load_config, save_config, shipped_configs
from mlassets.definitions import build_definitions
from mlassets.definitions import defs as load_defs

EXPECTED = {
    # key: (group, partitions, parents, checks)
    "flights/raw_flights": ("flights_data", "flights_partitions", [], []),
    "flights/snapshot": ("flights_snapshot", "flights_data_versions", ["flights/raw_flights"],
                         ["min_rows", "row_change", "schema", "target_mean", "target_quantiles"]),
    "flights/features": ("flights_features", "flights_data_versions", ["flights/snapshot"], []),
    "flights/checkpoints": ("flights_training", "flights_data_versions", ["flights/features"], []),
    "flights/candidate_model": ("flights_training", "flights_data_versions", ["flights/checkpoints"], []),
    "flights/evaluation": ("flights_evaluation", "flights_data_versions",
                           ["flights/candidate_model", "flights/features"], []),
    "flights/gate_result": ("flights_evaluation", "flights_data_versions", ["flights/evaluation"], ["gate_passed"]),
    "flights/registered_model": (
        "flights_registry", "flights_data_versions", ["flights/candidate_model", "flights/evaluation"], []
    ),
    "flights/champion": ("flights_registry", "flights_data_versions",
                         ["flights/gate_result", "flights/registered_model"], []),
    "flights/predictions": ("flights_serving", "flights_data_versions", ["flights/champion", "flights/features"], []),
    "flights/scaling_profile": ("flights_ops", "None", [], []),
    "flights/drift_report": ("flights_monitoring", "flights_data_versions", ["flights/snapshot"], []),
    "flights/decay": ("flights_monitoring", "None", ["flights/evaluation", "flights/registered_model"], []),
    "flights/tuned_hparams": ("flights_tuning", "None", ["flights/features"], []),
}


def _renamed(name: str) -> dict:
    """The flights lines for another dataset: every shipped config gets the same graph under its own name."""
    def rename(text: str) -> str:
        text = text.replace("raw_flights", f"raw_{name}").replace("flights/", f"{name}/")
        text = text.replace("flights_data_versions", f"{name}_data_versions")
        return text.replace("flights_partitions", f"{name}_partitions")

    return {rename(k): (group.replace("flights_", f"{name}_"), rename(parts), [rename(p) for p in parents], checks)
            for k, (group, parts, parents, checks) in EXPECTED.items()}


SHIPPED = {**EXPECTED, **_renamed("flights_lightgbm"), **_renamed("orders"),
           **_renamed("orders_late")}  # one graph per shipped config


def _partitions(node) -> str:
    pd = node.partitions_def
    if isinstance(pd, dg.DynamicPartitionsDefinition):
        return pd.name
    return "months" if isinstance(pd, dg.StaticPartitionsDefinition) else str(pd)


def _snapshot(definitions: dg.Definitions) -> dict:
    graph = definitions.resolve_asset_graph()
    out = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        out[key.to_user_string()] = (
            node.group_name,
            _partitions(node),
            sorted(p.to_user_string() for p in node.parent_keys),
            sorted(c.name for c in node.check_keys),
        )
    return out


@pytest.fixture
def defs(home: str) -> dg.Definitions:
    """The code location's definitions in an empty embedded stack: one graph per shipped config."""
    return load_defs()


def test_asset_graph_snapshot(defs):
    assert _snapshot(defs) == SHIPPED


def test_partitions_and_blocking_checks(defs):
    graph = defs.resolve_asset_graph()
    raw = graph.get(dg.AssetKey(["flights", "raw_flights"]))
    assert isinstance(raw.partitions_def, dg.DynamicPartitionsDefinition)  # keys are added as they are ingested
    assert raw.partitions_def.name == "flights_partitions"
    specs = {spec.key.name: spec for a in defs.assets for spec in getattr(a, "check_specs", [])}
    assert {name: spec.blocking for name, spec in specs.items()} == {
        "schema": True, "min_rows": True, "row_change": True, "target_mean": True, "target_quantiles": True,
        "gate_passed": False,  # a rejection is an answer: it fails the check and blocks nothing
    }


def test_jobs_and_resources(defs):
    assert {j.name for j in defs.resolve_all_job_defs()} >= {"flights_ingest", "flights_pipeline", "flights_monitor",
                                                             "flights_tune"}
    pipeline = defs.resolve_job_def("flights_pipeline")
    selected = {k.to_user_string() for k in pipeline.asset_layer.executable_asset_keys}
    assert selected == set(EXPECTED) - {"flights/raw_flights", "flights/scaling_profile", "flights/decay",
                                        "flights/tuned_hparams"}  # the unpartitioned ones: run on demand
    monitor = defs.resolve_job_def("flights_monitor")
    assert {k.to_user_string() for k in monitor.asset_layer.executable_asset_keys} == {
        "flights/snapshot", "flights/drift_report"}
    assert {s.name for s in defs.sensors} == {"flights_new_data", "flights_drift_retrain", "mlassets_run_failures",
                                              "flights_fleet_preemption",
                                              *(f"{d}_{s}" for d in ("flights_lightgbm", "orders", "orders_late")
                                                for s in ("new_data", "drift_retrain", "fleet_preemption"))}
    assert set(defs.resources) == {"store", "mlflow", "pipes", "io_manager"}
    assert all(j.executor_def.name == "in_process" for j in (pipeline, defs.resolve_job_def("flights_ingest")))


def test_the_code_location_builds_the_configs_it_finds(home: str, tmp_path, monkeypatch) -> None:
    flights = load_config(shipped_configs()["flights"])
    save_config(flights, Path(home) / "configs")  # registered by a demo or an ingest: only this one now
    assert {k.path[0] for k in load_defs().resolve_asset_graph().get_all_asset_keys()} == {"flights"}
    other = dataclasses.replace(flights, dataset=dataclasses.replace(flights.dataset, name="sales"),
                                model=dataclasses.replace(flights.model, registered_name="sales_model"))
    path = save_config(other, tmp_path / "elsewhere")
    monkeypatch.setenv(CONFIGS_ENV, str(path))  # configs anywhere: the variable wins
    assert {k.path[0] for k in load_defs().resolve_asset_graph().get_all_asset_keys()} == {"sales"}


def test_second_dataset_adds_assets_without_collisions():
    flights = load_config(shipped_configs()["flights"])
    other = dataclasses.replace(flights, dataset=dataclasses.replace(flights.dataset, name="flights_copy"),
                                model=dataclasses.replace(flights.model, registered_name="copy_model"))
    both = build_definitions([flights, other])
    keys = {k.to_user_string() for k in both.resolve_asset_graph().get_all_asset_keys()}
    assert len(keys) == 2 * len(EXPECTED)
    assert "flights_copy/snapshot" in keys and "flights/snapshot" in keys
    assert {"flights_copy_pipeline", "flights_pipeline"} <= {j.name for j in both.resolve_all_job_defs()}


def test_every_asset_names_the_owners_of_its_config(tmp_path) -> None:
    data = yaml.safe_load(shipped_configs()["flights"].read_text())
    data["automation"] = {"owners": ["ana@example.com", "team:forecasting"]}
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(data))
    graph = build_definitions([load_config(tmp_path / "f.yaml")]).resolve_asset_graph()
    owners = {key.to_user_string(): graph.get(key).owners for key in graph.get_all_asset_keys()}
    assert owners and all(o == ["ana@example.com", "team:forecasting"] for o in owners.values()), owners
