"""Serving handoff: ``load_champion`` and the ``predictions`` asset refuse ungated versions; the ``champion``
asset promotes through the log (auto) or waits (manual); registered versions carry a signature."""

from __future__ import annotations

import dataclasses
import hashlib
import uuid

import dagster as dg
import mlflow
import numpy as np
import pytest

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.core.data.parquet import from_parquet_bytes
from mlassets.core.data.raw import derived_repo
from mlassets.core.data.store import open_store
from mlassets.core.records import RecordFiles
from mlassets.core.registry import promote
from mlassets.core.registry import versions as registry
from mlassets.core.registry.record import RegisteredVersion
from mlassets.defs.factory import dataset_defs
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.resources import default_resources
from mlassets.serve import ServingError, load_champion, load_version
from tests.core.registry import test_promotion as shared

reg = shared.reg  # the shared MLflow store (see tests/core/test_promotion.py)
Registry = shared.Registry


def test_load_champion_serves_the_log_and_refuses_an_ungated_version(reg: Registry) -> None:
    reg.add(True, False)
    registry.set_alias(reg.name, registry.CHAMPION, "2")  # moved behind the log's back
    with pytest.raises(ServingError, match=rf"model '{reg.name}' has no champion in the promotion log \(its "
                                           r"champion alias points at v2, set outside the promotion log\)"):
        load_champion(reg.name)
    with pytest.raises(ServingError,
                       match=rf"model '{reg.name}' version 2 has no passing gate result \(rejected: slice"):
        load_version(reg.name, "2")
    promote.promote(reg.name, "1")
    served = load_champion(reg.name)
    assert (served.version, served.basis) == ("1", "gate passed")
    assert served.record["gate_passed"] == "true"
    registry.set_alias(reg.name, registry.CHAMPION, "2")  # again: the log still says v1, and v1 is served
    assert load_champion(reg.name).version == "1"


def test_load_champion_serves_a_forced_version_and_names_the_reason(reg: Registry) -> None:
    reg.add(True, False)
    promote.promote(reg.name, "2", force=True, reason="incident 42: the gate's holdout was corrupt")
    served = load_champion(reg.name)
    assert served.basis == "forced promotion: incident 42: the gate's holdout was corrupt"
    rows = shared.flights_rows(20, seed=3)
    np.testing.assert_array_equal(served.predict(rows), shared.tiny_bundle().predict(rows))


def test_load_champion_errors_name_the_model(reg: Registry) -> None:
    with pytest.raises(ServingError, match="model 'nope' is not registered"):
        load_champion("nope")
    reg.add(True)
    with pytest.raises(ServingError, match=f"model '{reg.name}' has no champion"):
        load_champion(reg.name)


def test_registered_versions_carry_a_signature(reg: Registry) -> None:
    [version] = reg.add(True)
    signature = mlflow.models.get_model_info(f"models:/{reg.name}/{version}").signature
    cfg = shared.FLIGHTS
    assert signature.inputs.input_names() == [*cfg.features.categorical, *cfg.features.numeric]
    rows = shared.flights_rows(30, seed=5)  # all columns, nullable Int64 weekday: enforcement keeps what it needs
    served = mlflow.pyfunc.load_model(f"models:/{reg.name}/{version}").predict(rows)
    np.testing.assert_allclose(np.asarray(served), shared.tiny_bundle().predict(rows))


def _config(reg: Registry, promotion: str = "auto") -> PipelineConfig:
    cfg = shared.FLIGHTS
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, registered_name=reg.name),
                               gate=dataclasses.replace(cfg.gate, promotion=promotion))


HOLDOUT = shared.flights_rows(50, seed=7)


@pytest.fixture(autouse=True)
def _holdout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every data version's holdout split is HOLDOUT (the feature store's layout is not under test here)."""
    import pyarrow as pa

    def chunks(store: object, cfg: object, version: str, split: str, budget_mb: int | None = None) -> list[pa.Table]:
        return [pa.Table.from_pandas(HOLDOUT[:20], preserve_index=False),  # read in two chunks
                pa.Table.from_pandas(HOLDOUT[20:], preserve_index=False)]

    monkeypatch.setattr("mlassets.defs.serving.split_tables", chunks)


def registered(reg: Registry, version: str, gated_against: str | None = None) -> RegisteredVersion:
    """The ``registered_model`` record of a version, as that asset would have handed it on (built by hand)."""
    record = registry.record_of(registry.get_version(reg.name, version))
    if gated_against is not None:
        gate = dataclasses.replace(record.gate_result, gated_against=gated_against)
        record = dataclasses.replace(record, gate_result=gate)
    return RegisteredVersion(name=reg.name, version=version, record=record)


def _materialize(cfg: PipelineConfig, asset: dg.AssetKey,
                 upstream: RegisteredVersion | None = None) -> tuple[bool, str, dict]:
    """Run one asset of the graph for a fresh data version; ``(success, failure text, metadata)``."""
    keys = DatasetKeys.of(cfg)
    partition = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(f"{cfg.dataset.name}_data_versions", [partition])
    if upstream is not None:  # what the registered_model asset of this data version handed on
        RecordFiles(paths.records_root()).write(keys.registered_model.path, partition, upstream)
    shared.end_active_runs()
    try:
        result = dg.materialize(dataset_defs(cfg).assets, selection=[asset], partition_key=partition,
                                instance=instance, resources=default_resources(), raise_on_error=False)
    finally:
        shared.end_active_runs()
    failures = [e.step_failure_data.error.message for e in result.all_events if e.is_step_failure]
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=asset), limit=1).records
    meta = {k: v.value for k, v in records[0].asset_materialization.metadata.items()} if records else {}
    return result.success, "\n".join(failures), meta


def test_champion_asset_promotes_through_the_log_or_waits(reg: Registry) -> None:
    reg.add(True, True, False)
    keys = DatasetKeys.of(_config(reg))
    ok, _, meta = _materialize(_config(reg, "manual"), keys.champion, registered(reg, "1"))
    assert ok and "awaiting" in meta["note"] and reg.champion() is None and reg.log.entries(reg.name) == []
    ok, _, meta = _materialize(_config(reg), keys.champion, registered(reg, "1"))
    [entry] = reg.log.entries(reg.name)
    assert ok and reg.champion() == "1" and meta["promotion_seq"] == 1
    assert entry.who.startswith("dagster run ") and entry.reason == "gate passed (promotion: auto)"
    ok, failure, meta = _materialize(_config(reg), keys.champion, registered(reg, "3"))  # a rejected version
    assert ok and not failure and meta == {} and reg.champion() == "1"  # no output (skipped): the champion stays
    stale = registered(reg, "2", gated_against="none")  # gated before v1 became champion
    ok, failure, _ = _materialize(_config(reg), keys.champion, stale)
    assert not ok and "gated against champion none, but the champion is now 1" in failure
    assert reg.champion() == "1" and len(reg.log.entries(reg.name)) == 1


def test_champion_asset_with_promotion_online_starts_a_canary_instead_of_promoting(reg: Registry) -> None:
    from mlassets.core.registry import online_log

    reg.add(True, True)
    keys = DatasetKeys.of(_config(reg))
    ok, _, meta = _materialize(_config(reg, "online"), keys.champion, registered(reg, "1"))
    assert ok and reg.champion() == "1"  # a first champion has nothing to be tested against
    assert reg.log.entries(reg.name)[0].reason == "gate passed (promotion: online)"
    ok, _, meta = _materialize(_config(reg, "online"), keys.champion, registered(reg, "2", gated_against="1"))
    assert ok and reg.champion() == "1" and meta["champion_version"] == "1"
    assert meta["note"].startswith("online test started: canary against v1")
    row = reg.log.entries(reg.name)[-1]
    assert (row.action, row.from_version, row.to_version) == ("canary-start", "1", "2")
    assert online_log.running(reg.name).candidate == "2"


def test_predictions_asset_scores_with_the_champion_and_refuses_ungated(reg: Registry) -> None:
    reg.add(True, False)
    cfg = _config(reg)
    key = dg.AssetKey([cfg.dataset.name, "predictions"])
    ok, _, meta = _materialize(cfg, key)
    assert ok and meta == {}  # no champion yet (promotion: manual): nothing to serve, nothing materialized
    promote.promote(reg.name, "1")
    ok, _, meta = _materialize(cfg, key)
    assert ok and meta["model_version"] == "1" and meta["serving_basis"] == "gate passed" and meta["rows"] == 50
    path = f"predictions/{meta['data_commit']}/{reg.name}-v1.parquet"
    stored = from_parquet_bytes(open_store().read(derived_repo(cfg), meta["predictions_commit"], path))
    expected = shared.tiny_bundle().predict(HOLDOUT)
    np.testing.assert_allclose(stored["prediction"].to_numpy(), expected)
    assert set(cfg.dataset.key) <= set(stored.columns) and meta["mae"] > 0
    registry.set_alias(reg.name, registry.CHAMPION, "2")  # an ungated version behind the log's back ...
    ok, _, meta = _materialize(cfg, key)
    assert ok and meta["model_version"] == "1"  # ... is not served: the log's champion is
