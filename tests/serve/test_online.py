"""The online test on real servers on loopback and a real registry: a canary that meets the rule is promoted and
the endpoint follows; a shifted one is rolled back and the champion stays; a shadow never answers; a candidate
that fails the load checks is refused; every step is a row of the promotion log with its reason."""

from __future__ import annotations

import dataclasses
import json
import threading

import httpx
import mlflow
import pytest
import torch

from mlassets.core import paths
from mlassets.core.config.serving import OnlineConfig
from mlassets.core.diagnose import spans
from mlassets.core.evaluate.online_labels import PREDICTIONS, online_dir
from mlassets.core.registry import online_log, promote
from mlassets.core.registry import versions as registry
from mlassets.core.train import mlflow_model
from mlassets.core.train.artifact import ModelBundle, save_bundle, weights_sha256
from mlassets.core.train.torch_run.mlp import TabularMLP
from mlassets.serve.build import TRACE_FILE, build
from tests.core.registry import test_promotion as shared
from tests.serve.server import flow, running, until

reg = shared.reg
Registry = shared.Registry
FEATURES = [*shared.FLIGHTS.features.categorical, *shared.FLIGHTS.features.numeric]
ROWS = {"rows": json.loads(shared.flights_rows(4, seed=3)[FEATURES].to_json(orient="records"))}
RULE = OnlineConfig(share=0.25, min_requests=12, max_latency_ratio=1000.0)  # latency: the rule's own tests
_SHIFTED: dict[str, str] = {}


def _shifted(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """``(model_uri, weights)`` of a tiny model whose predictions sit 500 minutes above the shared one's."""
    if not _SHIFTED:
        torch.manual_seed(0)
        base = shared.tiny_bundle()
        model = TabularMLP(base.preprocessor.cardinalities, len(base.preprocessor.numeric), 2, [4], 0.0)
        bundle = ModelBundle(model, base.preprocessor, base.model_config, "arr_delay", 505.0, 30.0)
        folder = save_bundle(bundle, tmp_path_factory.mktemp("shifted") / "bundle")
        shared.end_active_runs()
        with mlflow.start_run():
            uri = mlflow_model.log_model(folder)
        registry.set_signature(uri, bundle, shared.flights_rows())
        _SHIFTED.update(uri=uri, weights=weights_sha256(folder))
    return _SHIFTED["uri"], _SHIFTED["weights"]


def _actions(reg: Registry) -> list[tuple[str, str]]:
    return [(e.action, e.to_version) for e in reg.log.entries(reg.name)]


def _serveuntil(reg: Registry, done, what: str, rule: OnlineConfig = RULE):  # noqa: ANN001, ANN202
    """Requests flow through a real server until ``done()``; returns (answers, GET /online mid-test, metrics)."""
    app = build(reg.name, "flights", swap_poll_s=0.1, online=rule)
    seen: list[tuple[int, str]] = []
    stop = threading.Event()
    with running(app) as base:
        (thread,) = flow(base, stop, seen, ROWS, clients=1)
        try:
            until(lambda: app.state.online.running is not None and len(seen) >= 4, "the test to start")
            during = httpx.get(f"{base}/online").json()
            until(lambda: done(app), what)
            count = len(seen)
            until(lambda: len(seen) >= count + 12, "requests after the decision")
        finally:
            stop.set()
            thread.join(timeout=60)
        metrics = httpx.get(f"{base}/metrics").text
    failed = [s for s in seen if s[0] != 200]
    assert not failed, failed[:3]
    return [v for _, v in seen], during, metrics


def test_a_canary_that_meets_the_rule_is_promoted_and_the_endpoint_follows(reg: Registry) -> None:
    reg.add(True, True)
    promote.promote(reg.name, "1")
    started = online_log.start(reg.name, "2", "canary", who="tester")
    assert registry.alias_version(reg.name, online_log.CANDIDATE).version == 2
    assert promote.live_version(reg.name) == "1"  # a started test moves nothing
    versions, during, metrics = _serveuntil(reg, lambda app: app.state.champion.current.version == "2",
                                            "the promotion and the swap")
    assert _actions(reg) == [("promote", "1"), ("canary-start", "2"), ("promote", "2")]
    row = reg.log.entries(reg.name)[-1]
    assert row.from_version == "1" and row.reason.startswith("online test passed after ")
    assert "prediction shift 0.000" in row.reason and row.who.startswith("mlassets serve on ")
    assert started.reason == "gate passed; canary against v1"
    assert during["test"]["candidate"] == "2" and during["test"]["mode"] == "canary"
    first_two = versions.index("2")
    assert "1" in versions[first_two:]  # the canary answered its share while v1 was champion ...
    assert versions[-8:] == ["2"] * 8  # ... and after the promotion the endpoint serves v2 alone
    assert 'variant="canary"' in metrics and registry.alias_version(reg.name, online_log.CANDIDATE) is None
    assert {"champion", "canary"} <= {s["attributes"].get("variant") for s in _roots(spans.ENDPOINT)}


def _roots(name: str) -> list[dict]:
    lines = (paths.home() / TRACE_FILE).read_text().splitlines()
    return [s for s in map(json.loads, lines) if s["name"] == name and not s["parent_id"]]


def test_a_shifted_canary_is_rolled_back_and_the_champion_stays(
        reg: Registry, tmp_path_factory: pytest.TempPathFactory) -> None:
    uri, weights = _shifted(tmp_path_factory)
    reg.add(True)
    bad = str(registry.register(reg.name, uri, shared.record(True, weights)).version)
    promote.promote(reg.name, "1")
    online_log.start(reg.name, bad, "canary")
    versions, _during, _metrics = _serveuntil(
        reg, lambda app: _actions(reg)[-1][0] == online_log.ROLLED_BACK and app.state.online.running is None,
        "the rollback")
    assert _actions(reg) == [("promote", "1"), ("canary-start", bad), ("online-rollback", bad)]
    reason = reg.log.entries(reg.name)[-1].reason
    assert reason.startswith("online test failed after ") and "prediction shift" in reason
    assert promote.live_version(reg.name) == "1" and bad in versions and versions[-8:] == ["1"] * 8
    assert online_log.running(reg.name) is None and not reg.log.verify(reg.name)


def test_a_shadow_scores_every_request_but_never_answers(
        reg: Registry, tmp_path_factory: pytest.TempPathFactory) -> None:
    uri, weights = _shifted(tmp_path_factory)
    reg.add(True)
    shadow = str(registry.register(reg.name, uri, shared.record(True, weights)).version)
    promote.promote(reg.name, "1")
    seq = online_log.start(reg.name, shadow, "shadow").seq
    versions, _during, metrics = _serveuntil(
        reg, lambda app: _actions(reg)[-1][0] == online_log.ROLLED_BACK, "the shadow's rollback",
        dataclasses.replace(RULE, label_key=["carrier", "origin"]))
    assert set(versions) == {"1"}  # the shadow never answered
    recorded = [json.loads(line) for line in (online_dir(reg.name, seq) / PREDICTIONS).read_text().splitlines()]
    traces = {v: {r["trace_id"] for r in recorded if r["variant"] == v} for v in ("champion", "shadow")}
    assert traces["shadow"] and traces["shadow"] <= traces["champion"]  # both variants, under the request's trace
    assert {r["version"] for r in recorded if r["variant"] == "shadow"} == {shadow}
    assert "prediction shift" in reg.log.entries(reg.name)[-1].reason
    assert 'mlassets_serving_scoring_seconds_count{variant="shadow"}' in metrics
    shadows = _roots("shadow_request")
    assert shadows and {s["attributes"]["variant"] for s in shadows} == {"shadow"}
    assert shadow in {s["attributes"]["version"] for s in shadows}


def test_a_candidate_that_fails_the_load_checks_is_rolled_back_with_the_reason(reg: Registry) -> None:
    reg.add(True)
    promote.promote(reg.name, "1")
    bad = str(registry.register(reg.name, reg.uri, shared.record(True)).version)  # weights its model does not have
    online_log.start(reg.name, bad, "canary")
    app = build(reg.name, "flights", poll=False, online=RULE)
    assert app.state.online.poll() == "refused"
    assert _actions(reg)[-1] == ("online-rollback", bad)
    assert "refused at load by the endpoint" in reg.log.entries(reg.name)[-1].reason
    assert app.state.online.running is None and promote.live_version(reg.name) == "1"


def test_start_refuses_without_a_champion_twice_or_for_the_champion(reg: Registry) -> None:
    reg.add(True, True, True)
    with pytest.raises(online_log.PromotionError, match="no champion to test v2 against"):
        online_log.start(reg.name, "2")
    promote.promote(reg.name, "1")
    with pytest.raises(online_log.PromotionError, match="already the champion"):
        online_log.start(reg.name, "1")
    online_log.start(reg.name, "2", "shadow")
    with pytest.raises(online_log.PromotionError, match="already has an online test running: v2 \\(shadow"):
        online_log.start(reg.name, "3")
    assert _actions(reg) == [("promote", "1"), ("shadow-start", "2")]
    promote.promote(reg.name, "3")  # a promotion by hand ends the test: it compared against v1
    assert online_log.running(reg.name) is None


def test_the_canary_is_batched_as_the_champion_is_and_every_arrival_is_closed(reg: Registry) -> None:
    reg.add(True, True)
    promote.promote(reg.name, "1")
    online_log.start(reg.name, "2", "canary")
    app = build(reg.name, "flights", swap_poll_s=0.1, online=dataclasses.replace(RULE, share=0.5, auto_decide=False),
                batching=False, max_batch_size=32, batch_wait_ms=7.0)
    seen: list[tuple[int, str]] = []
    stop = threading.Event()
    with running(app) as base:
        until(lambda: app.state.online.running is not None, "the test to start")
        run = app.state.online.running
        threads = flow(base, stop, seen, ROWS, clients=3)
        try:
            until(lambda: run.stats["candidate"].requests >= 6 and run.stats["champion"].requests >= 6,
                  "requests answered by both")
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        policy = [(b.max_rows, b.wait_s, b.enabled) for b in (app.state.batcher, run.batcher)]
        assert policy == [(32, 0.007, False)] * 2  # batching off for the canary too, the same window
        assert (app.state.batcher.arriving, run.batcher.arriving) == (0, 0)  # every admitted request was queued
    assert all(status == 200 for status, _ in seen) and {"1", "2"} <= {v for _, v in seen}


def test_the_cli_starts_shows_and_rolls_back_a_test_by_hand(reg: Registry, capsys: pytest.CaptureFixture) -> None:
    from mlassets.cli import main

    reg.add(True, True)
    promote.promote(reg.name, "1")
    assert main(["online", "start", reg.name, "2", "--mode", "canary"]) == 0
    assert f"{reg.name}: v2 started as canary against v1" in capsys.readouterr().out
    app = build(reg.name, "flights", swap_poll_s=0.1, online=OnlineConfig(share=0.5, auto_decide=False))
    with running(app) as base:
        until(lambda: app.state.online.running is not None, "the test to start")
        for _ in range(6):
            assert httpx.post(f"{base}/predict", json=ROWS).status_code == 200
        assert main(["online", "status", reg.name, "--url", base]) == 0
        shown = capsys.readouterr().out
        with pytest.raises(SystemExit):  # a decision by hand needs a reason
            main(["online", "rollback", reg.name])
        capsys.readouterr()
        assert main(["online", "rollback", reg.name, "--reason", "dashboards look off"]) == 0
        done = capsys.readouterr().out
    assert "v2 as canary against champion v1" in shown
    table = [line.split()[:3] for line in shown.splitlines() if line.startswith(("champion", "canary"))]
    assert [name for name, _, _ in table] == ["champion", "canary"] and [e for _, _, e in table] == ["0", "0"]
    champion, canary = (int(n) for _, n, _ in table)
    assert champion + canary == 6  # each request answered by one of them (the canary drawn per request)
    assert f"rule: wait: {canary} candidate and {champion} champion requests; the rule decides at 200 each" in shown
    assert "online-rollback v2" in done and "by hand: dashboards look off" in done
    assert _actions(reg)[-1] == ("online-rollback", "2") and promote.live_version(reg.name) == "1"
    assert main(["online", "status", reg.name, "--url", "http://127.0.0.1:9"]) == 0
    assert "no online test running" in capsys.readouterr().out
