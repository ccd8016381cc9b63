"""Feature retrieval at request time on a real local store and a real server: a row gives origin and time_hour
instead of the weather columns, the weather row of the store fills them (the same answer as the full row), the
lookup is a span of its own that the diagnosis reads, a key the store lacks is a 422 naming it, and a new data
version's weather is read when the branch moves."""

from __future__ import annotations

import json
import threading
import time

import httpx
import numpy as np
import pandas as pd
import pytest

from mlassets.cli.diagnose_serving import report
from mlassets.core import paths
from mlassets.core.config.serving import ServingConfig
from mlassets.core.data import raw
from mlassets.core.data.parquet import to_parquet_bytes
from mlassets.core.data.store.local import LocalStore
from mlassets.core.diagnose import spans
from mlassets.core.registry import promote
from mlassets.serve.app import create_app
from mlassets.serve.build import TRACE_FILE
from mlassets.serve.features import DELAY_ENV, FeatureLookup, lookup_for, tables_for
from mlassets.serve.load import load_champion
from mlassets.serve.rows import schema_of
from mlassets.serve.swap import Champion
from tests.core.registry import test_promotion as shared
from tests.serve.server import running

reg = shared.reg
Registry = shared.Registry
CFG = shared.FLIGHTS
WEATHER = pd.DataFrame({
    "origin": ["EWR", "JFK", "EWR"],
    "time_hour": pd.to_datetime(["2013-01-01 13:00", "2013-01-01 13:00", "2013-01-01 14:00"], utc=True),
    "temp": 39.0, "dewp": 26.0, "humid": 59.0, "wind_speed": [10.4, 12.7, None], "precip": [0.0, 0.01, 0.0],
    "pressure": 1012.0, "visib": [10.0, 8.0, 9.0]})
FLIGHT = {"carrier": "UA", "origin": "EWR", "dest": "ORD", "dep_hour": 8, "weekday": 1, "distance": 719}


def _commit(store: LocalStore, weather: pd.DataFrame, month: str = "2013-01") -> str:
    repo = raw.raw_repo(CFG)
    store.create_repo(repo, default_branch=raw.WATCHED_BRANCH)
    return store.commit(repo, raw.WATCHED_BRANCH, {raw.raw_path("weather", month): to_parquet_bytes(weather)},
                        f"weather {month}").id


def _served(reg: Registry, tmp_path, kind: type[FeatureLookup] = FeatureLookup):  # noqa: ANN001, ANN202
    reg.add(True)
    promote.promote(reg.name, "1")
    store = LocalStore(tmp_path / "store")
    _commit(store, WEATHER)
    spans.enable(paths.home() / TRACE_FILE)
    model = load_champion(reg.name)
    pre = model.bundle.preprocessor
    schema = schema_of(pre.categorical, pre.numeric, CFG)
    assert [t.name for t in tables_for(CFG, schema)] == ["weather"]
    lookup = kind(store, CFG, tables_for(CFG, schema))
    app = create_app(Champion(model), schema, ServingConfig(swap_poll_s=0.1), poll=True, lookup=lookup)
    return app, store, schema


@pytest.fixture
def served(reg: Registry, tmp_path):  # noqa: ANN201 - (app, store)
    app, store, _schema = _served(reg, tmp_path)
    return app, store


class HeldLookup(FeatureLookup):
    """Holds every lookup of a JFK row until ``release`` (a features store that hangs on one key)."""

    holding, release = threading.Event(), threading.Event()

    def fill(self, records):  # noqa: ANN001, ANN201
        if any(r.get("origin") == "JFK" for r in records):
            self.holding.set()
            assert self.release.wait(60)
        return super().fill(records)


def test_a_slow_lookup_delays_only_its_own_request(reg: Registry, tmp_path) -> None:
    app, _store, _schema = _served(reg, tmp_path, HeldLookup)
    HeldLookup.holding.clear()
    HeldLookup.release.clear()
    answers: dict[str, httpx.Response] = {}
    held = {**FLIGHT, "origin": "JFK", "time_hour": "2013-01-01T13:00:00Z"}
    with running(app) as base:
        slow = threading.Thread(target=lambda: answers.update(
            slow=httpx.post(f"{base}/predict", json={"rows": [held]}, timeout=90)), daemon=True)
        slow.start()
        try:
            assert HeldLookup.holding.wait(60), "the held lookup did not start"
            other = httpx.post(f"{base}/predict", json={"rows": [{**FLIGHT, "time_hour": "2013-01-01T13:00:00Z"}]},
                               timeout=30)  # its own lookup, while the JFK one hangs
            assert other.status_code == 200, other.text
            assert "slow" not in answers  # answered while the held request still waits on its lookup
        finally:
            HeldLookup.release.set()
            slow.join(timeout=60)
    assert answers["slow"].status_code == 200, answers["slow"].text


def test_a_delay_for_every_lookup_is_set_from_the_environment(reg: Registry, tmp_path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _app, store, schema = _served(reg, tmp_path)
    monkeypatch.setenv(DELAY_ENV, "25")
    lookup = lookup_for(CFG, schema, store)
    assert lookup is not None and lookup.delay_ms == 25.0
    monkeypatch.setenv(DELAY_ENV, "slow")
    with pytest.raises(ValueError, match="MLASSETS_FEATURE_DELAY_MS: must be a number of milliseconds .* 'slow'"):
        lookup_for(CFG, schema, store)


def test_keys_instead_of_weather_give_the_full_rows_answer_and_a_span_the_diagnosis_reads(served) -> None:
    app, _store = served
    keyed = [{**FLIGHT, "time_hour": "2013-01-01T13:00:00Z"}, {**FLIGHT, "origin": "JFK",
                                                                "time_hour": "2013-01-01 08:00:00-05:00"}]
    full = [{**FLIGHT, "precip": 0.0, "visib": 10.0, "wind_speed": 10.4},
            {**FLIGHT, "origin": "JFK", "precip": 0.01, "visib": 8.0, "wind_speed": 12.7}]
    with running(app) as base:
        by_keys = httpx.post(f"{base}/predict", json={"rows": keyed})
        by_rows = httpx.post(f"{base}/predict", json={"rows": full})
        nullable = httpx.post(f"{base}/predict", json={"rows": [{**FLIGHT, "time_hour": "2013-01-01T14:00:00Z"}]})
        for _ in range(3):
            httpx.post(f"{base}/predict", json={"rows": keyed})
    assert by_keys.status_code == 200, by_keys.text
    np.testing.assert_allclose(by_keys.json()["predictions"], by_rows.json()["predictions"], rtol=1e-9)
    assert nullable.status_code == 200  # the store's missing wind_speed: nullable in the config, imputed
    lines = [json.loads(x) for x in (paths.home() / TRACE_FILE).read_text().splitlines()]
    trace = by_keys.json()["trace_id"]
    mine = [s for s in lines if s["trace_id"] == trace]
    retrieval = [s for s in mine if s["name"] == "feature_retrieval"]
    assert len(retrieval) == 1 and retrieval[0]["attributes"]["rows"] == 2
    assert not [s for s in lines if s["trace_id"] == by_rows.json()["trace_id"] and s["name"] == "feature_retrieval"]
    frame = spans.read_spans(paths.home() / TRACE_FILE)
    keyed_ids = {trace} | {s["trace_id"] for s in lines if s["name"] == "feature_retrieval"}
    table = report(frame[frame["trace_id"].isin(keyed_ids)], "keyed")
    row = next(line for line in table.splitlines() if line.startswith("feature retrieval"))
    assert float(row.split()[2]) > 0.0  # its p50: the diagnosis reads the lookup's own span


def test_a_key_the_store_lacks_is_a_422_naming_it_and_a_new_version_is_read(served) -> None:
    app, store = served
    later = {**FLIGHT, "time_hour": "2013-02-01T13:00:00Z"}
    with running(app) as base:
        missing = httpx.post(f"{base}/predict", json={"rows": [later]})
        both = httpx.post(f"{base}/predict", json={"rows": [{**later, "precip": 0.0}]})
        no_origin = httpx.post(f"{base}/predict", json={"rows": [{k: v for k, v in later.items() if k != "origin"}]})
        bad_time = httpx.post(f"{base}/predict", json={"rows": [{**later, "time_hour": "soon"}]})
        february = WEATHER.assign(time_hour=WEATHER["time_hour"] + pd.Timedelta(days=31))
        head = _commit(store, february, "2013-02")
        lookup = app.state.lookup
        deadline = time.monotonic() + 60
        while lookup.commit != head:
            assert time.monotonic() < deadline, "the lookup did not follow the branch"
            time.sleep(0.05)
        found = httpx.post(f"{base}/predict", json={"rows": [later]})
        assert httpx.get(f"{base}/ready").status_code == 200  # the server kept serving throughout
    assert missing.status_code == 422
    assert missing.json()["error"].startswith("row 0: no weather row for origin='EWR', "
                                              "time_hour='2013-02-01T13:00:00Z' in the features store (flights@")
    assert both.status_code == 422 and "give 'time_hour' (looked up in weather) or 'precip', not both" in both.text
    assert no_origin.status_code == 422 and "missing key column 'origin' to look up weather" in no_origin.text
    assert bad_time.status_code == 422 and "key 'time_hour' must be a time" in bad_time.text
    assert found.status_code == 200, found.text
