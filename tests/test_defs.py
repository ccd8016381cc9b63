"""Snapshot of the asset graph: any change to keys, groups, partitions, checks or jobs shows in review."""

from __future__ import annotations

import dataclasses

import dagster as dg

from mlassets.core.config import load_config, shipped_configs
from mlassets.definitions import build_definitions, defs

EXPECTED = {
    # key: (group, partitions, parents, checks)
    "flights/raw_flights": ("data", "months", [], []),
    "flights/snapshot": ("snapshot", "flights_data_versions", ["flights/raw_flights"],
                         ["min_rows", "row_change", "schema", "target_mean", "target_quantiles"]),
    "flights/features": ("features", "flights_data_versions", ["flights/snapshot"], []),
    "flights/checkpoints": ("training", "flights_data_versions", ["flights/features"], []),
    "flights/candidate_model": ("training", "flights_data_versions", ["flights/checkpoints"], []),
    "flights/evaluation": ("evaluation", "flights_data_versions", ["flights/candidate_model"], []),
    "flights/gate_result": ("evaluation", "flights_data_versions", ["flights/evaluation"], []),
    "flights/registered_model": (
        "registry", "flights_data_versions", ["flights/candidate_model", "flights/gate_result"], ["gate_passed"]
    ),
    "flights/champion": ("registry", "flights_data_versions", ["flights/registered_model"], []),
    "flights/predictions": ("serving", "flights_data_versions", ["flights/champion", "flights/features"], []),
    "flights/scaling_profile": ("ops", "None", [], []),
}


def _renamed(name: str) -> dict:
    """The flights lines for another dataset: every shipped config gets the same graph under its own name."""
    def rename(text: str) -> str:
        text = text.replace("raw_flights", f"raw_{name}").replace("flights/", f"{name}/")
        return text.replace("flights_data_versions", f"{name}_data_versions")

    return {rename(k): (group, rename(parts), [rename(p) for p in parents], checks)
            for k, (group, parts, parents, checks) in EXPECTED.items()}


SHIPPED = {**EXPECTED, **_renamed("orders"), **_renamed("orders_late")}  # one graph per shipped config


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


def test_asset_graph_snapshot():
    assert _snapshot(defs) == SHIPPED


def test_months_and_blocking_checks():
    graph = defs.resolve_asset_graph()
    raw = graph.get(dg.AssetKey(["flights", "raw_flights"]))
    assert raw.partitions_def.get_partition_keys() == [f"2013-{m:02d}" for m in range(1, 13)]
    weeks = graph.get(dg.AssetKey(["orders", "raw_orders"])).partitions_def.get_partition_keys()
    assert (weeks[0], weeks[-1], len(weeks)) == ("2024-W01", "2024-W26", 26)
    specs = {spec.key.name: spec for a in defs.assets for spec in getattr(a, "check_specs", [])}
    assert {name: spec.blocking for name, spec in specs.items()} == {
        "schema": True, "min_rows": True, "row_change": True, "target_mean": True, "target_quantiles": True,
        "gate_passed": True,
    }


def test_jobs_and_resources():
    assert {j.name for j in defs.resolve_all_job_defs()} >= {"flights_ingest", "flights_pipeline"}
    pipeline = defs.resolve_job_def("flights_pipeline")
    selected = {k.to_user_string() for k in pipeline.asset_layer.executable_asset_keys}
    assert selected == set(EXPECTED) - {"flights/raw_flights", "flights/scaling_profile"}  # ops: run on demand
    assert "end_mlflow_on_run_finished" in {h.name for h in pipeline.hook_defs}
    assert set(defs.resources) == {"store", "mlflow", "pipes", "io_manager"}


def test_second_dataset_adds_assets_without_collisions():
    flights = load_config(shipped_configs()["flights"])
    other = dataclasses.replace(flights, dataset=dataclasses.replace(flights.dataset, name="flights_copy"),
                                model=dataclasses.replace(flights.model, registered_name="copy_model"))
    both = build_definitions([flights, other])
    keys = {k.to_user_string() for k in both.resolve_asset_graph().get_all_asset_keys()}
    assert len(keys) == 2 * len(EXPECTED)
    assert "flights_copy/snapshot" in keys and "flights/snapshot" in keys
    assert {"flights_copy_pipeline", "flights_pipeline"} <= {j.name for j in both.resolve_all_job_defs()}
