"""Hot swap on a real registry: a promotion while requests flow moves the endpoint to the new version without a
failed request; a version that fails the checks is refused with an alert and the old one keeps serving."""

from __future__ import annotations

import json
import logging
import threading

import httpx
import pytest

from mlassets.core.registry import promote
from mlassets.core.registry import versions as registry
from mlassets.serve.build import build
from tests.core.registry import test_promotion as shared
from tests.serve.server import flow, running, until

reg = shared.reg
Registry = shared.Registry
FEATURES = [*shared.FLIGHTS.features.categorical, *shared.FLIGHTS.features.numeric]
ROWS = {"rows": json.loads(shared.flights_rows(4, seed=2)[FEATURES].to_json(orient="records"))}


def test_a_promotion_under_load_swaps_without_a_failed_request_and_a_bad_version_is_refused(
        reg: Registry, caplog: pytest.LogCaptureFixture) -> None:
    reg.add(True, True)
    promote.promote(reg.name, "1")
    app = build(reg.name, "flights", swap_poll_s=0.1)
    seen: list[tuple[int, str]] = []
    stop = threading.Event()
    with running(app) as base:
        threads = flow(base, stop, seen, ROWS)
        try:
            until(lambda: len(seen) >= 20, "requests served by v1")
            promote.promote(reg.name, "2")
            until(lambda: any(v == "2" for _, v in seen), "the swap to v2")
            count = len(seen)
            until(lambda: len(seen) >= count + 20, "requests after the swap")
            # v3 names weights its logged model does not have: its folder fails the checks
            bad = registry.register(reg.name, reg.uri, shared.record(True)).version
            with caplog.at_level(logging.ERROR, logger="mlassets.serve"):
                promote.promote(reg.name, bad)
                until(lambda: any("ALERT" in r.message for r in caplog.records), "the refusal's alert")
            count = len(seen)
            until(lambda: len(seen) >= count + 20, "requests after the refusal")
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        metrics = httpx.get(f"{base}/metrics").text
    failed = [s for s in seen if s[0] != 200]
    assert not failed, failed[:3]
    versions = [v for _, v in seen]
    assert set(versions) == {"1", "2"} and versions[-1] == "2"
    assert versions.index("2") > 0 and "1" not in versions[versions.index("2") + 8:]  # in-flight ones excepted
    alert = next(r.message for r in caplog.records if "ALERT" in r.message)
    assert f"{reg.name} v{bad} is refused, v2 keeps serving" in alert
    assert 'mlassets_serving_swaps_total{outcome="swapped"} 1.0' in metrics
    assert 'mlassets_serving_swaps_total{outcome="refused"} 1.0' in metrics


def test_a_tampered_log_is_refused_at_swap_and_at_start_while_the_old_version_keeps_serving(
        reg: Registry, caplog: pytest.LogCaptureFixture) -> None:
    import sqlite3

    from fastapi.testclient import TestClient

    from mlassets.serve import ServingError

    reg.add(True, True, True)
    promote.promote(reg.name, "1")
    with TestClient(build(reg.name, "flights", poll=False)) as client:
        champion = client.app.state.champion
        assert champion.poll_once() == "unchanged"
        promote.promote(reg.name, "2")
        assert champion.poll_once() == "swapped" and client.post("/predict", json=ROWS).json()["version"] == "2"
        promote.promote(reg.name, "3")
        last = reg.log.entries(reg.name)[-1]
        with sqlite3.connect(reg.db) as conn:  # the newest row deleted: the log ends before its anchor
            conn.execute("DELETE FROM promotions WHERE model = ? AND seq = ?", (reg.name, last.seq))
        with caplog.at_level(logging.ERROR, logger="mlassets.serve"):
            assert champion.poll_once() == "refused"
        assert any(f"ALERT: the promotion log of '{reg.name}' is not trusted" in r.message for r in caplog.records)
        answer = client.post("/predict", json=ROWS)
        assert answer.status_code == 200 and answer.json()["version"] == "2"
    with pytest.raises(ServingError, match="rows were deleted"):
        build(reg.name, "flights", poll=False)  # a restart refuses it too
