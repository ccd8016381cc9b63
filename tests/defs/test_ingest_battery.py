"""Bad inputs through the real ``raw_flights`` asset: each is blocked naming the column and an offending value;
main's head, the champion and every earlier version stay exactly as they were."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from mlassets.cli.demo import play as run_pipeline
from mlassets.core import paths, tracking
from mlassets.core.config import PipelineConfig
from mlassets.core.data.ingest import Ingested
from mlassets.core.data.raw import WATCHED_BRANCH, partition_tables, raw_repo
from mlassets.core.data.store import VersionedStore, open_store
from mlassets.core.records import RecordFiles
from mlassets.core.registry import versions as registry
from mlassets.definitions import build_definitions
from mlassets.defs.factory import ingest_job_name
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import raw_partitions
from mlassets.host.instance import get_instance
from mlassets.host.runs import QUIET, ingest
from tests.conftest import small_flights

pytestmark = pytest.mark.e2e
MONTH = "2013-03"


@dataclass
class Stack:
    cfg: PipelineConfig
    defs: dg.Definitions
    instance: dg.DagsterInstance
    store: VersionedStore
    tables: dict[str, pd.DataFrame]  # the real, valid tables of MONTH
    work: Path


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Stack:
    """Two good months ingested, the pipeline run once (a champion registered); MONTH not ingested yet."""
    home = tmp_path_factory.mktemp("battery-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLASSETS_HOME", str(home))
        mp.delenv("DAGSTER_HOME", raising=False)
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        cfg = small_flights()
        defs, instance = build_definitions([cfg]), get_instance()
        version = ""
        for month in ("2013-01", "2013-02"):
            version = ingest(instance, cfg, month).key
        assert run_pipeline(instance, cfg, "2013-02", version).decision == "pass"
        yield Stack(cfg, defs, instance, open_store(), partition_tables(cfg, MONTH), home / "bad")
        instance.dispose()


def _feed(stack: Stack, tables: dict[str, pd.DataFrame], name: str) -> dg.ExecuteInProcessResult:
    """Run the real ingest job for MONTH on prepared tables (a delivered folder: ``delivered`` of the raw asset's
    config, ``mlassets ingest --from``)."""
    directory = stack.work / name
    directory.mkdir(parents=True)
    for table, frame in tables.items():
        frame.to_parquet(directory / f"{table}.parquet", index=False)
    op = DatasetKeys.of(stack.cfg).raw.to_python_identifier()
    stack.instance.add_dynamic_partitions(raw_partitions(stack.cfg).name, [MONTH])
    return stack.defs.resolve_job_def(ingest_job_name(stack.cfg)).execute_in_process(
        instance=stack.instance, partition_key=MONTH, raise_on_error=False,
        run_config={**QUIET, "ops": {op: {"config": {"delivered": str(directory)}}}},
    )


def _failure(result: dg.ExecuteInProcessResult) -> str:
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failures, "the ingest run did not fail"
    data = failures[0].step_failure_data
    return data.user_failure_data.description if data.user_failure_data else data.error.message


def _state(stack: Stack) -> dict[str, object]:
    """What must not change: main's head, the branches, the versions and their bytes, the champion."""
    from mlassets.core.data.version_keys import resolve_key

    repo = raw_repo(stack.cfg)
    keys = stack.instance.get_dynamic_partitions(f"{stack.cfg.dataset.name}_data_versions")
    versions = [resolve_key(stack.store, stack.cfg, k) for k in keys]
    tracking.configure()
    champion = registry.alias_version(stack.cfg.model.registered_name, registry.CHAMPION)
    return {
        "head": stack.store.resolve(repo, WATCHED_BRANCH),
        "branches": sorted(stack.store.list_branches(repo)),
        "versions": keys,
        "bytes": {v: {p: hashlib.sha256(stack.store.read(repo, v, p)).hexdigest()[:16]  # a short diff names the path
                      for p in stack.store.list_objects(repo, v)} for v in versions},
        "champion": champion.version if champion else None,
    }


def _set(column: str, row: int, value: object, as_text: bool = False) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def mutate(f: pd.DataFrame) -> pd.DataFrame:
        if as_text:
            f[column] = f[column].astype(str)  # as a CSV column with one bad cell reads
        f.loc[row, column] = value
        return f

    return mutate


def _epoch_seconds(f: pd.DataFrame) -> pd.DataFrame:
    f["time_hour"] = pd.to_datetime(f["time_hour"], utc=True).astype("int64") // 10**9  # producer's new format
    return f


def _duplicate(f: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([f, f.iloc[[10, 20]]], ignore_index=True)


def _all_null(f: pd.DataFrame) -> pd.DataFrame:
    f["carrier"] = None
    return f


def _shift_all(f: pd.DataFrame) -> pd.DataFrame:
    f["arr_delay"] = (f["arr_delay"] + 45).clip(upper=1500)  # every row 45 min later: still in range
    return f


# (id, mutation of MONTH's flights table, the column named, an offending value named)
BAD: list[tuple[str, Callable[[pd.DataFrame], pd.DataFrame], str, str]] = [
    ("missing-column", lambda f: f.drop(columns=["origin"]), "'origin'", "is missing"),
    ("wrong-dtype", _epoch_seconds, "'time_hour'", "coerce_dtype('datetime64[ns, UTC]')"),  # numbers are no times
    ("nan-target", _set("arr_delay", 5, np.nan), "'arr_delay'", "nan"),
    ("negative-air-time", _set("air_time", 5, -5.0), "'air_time'", "-5"),
    ("duplicate-flight-keys", _duplicate, "'flight'", "not unique"),
    ("empty-month", lambda f: f.iloc[0:0], MONTH, "0 rows"),
    ("unknown-origin", _set("origin", 7, "XXX"), "'origin'", "'XXX'"),
    ("absurd-delay", _set("arr_delay", 5, 99999.0), "'arr_delay'", "99999"),
    ("future-date", _set("time_hour", 11, "2031-03-01T10:00:00Z"), "'time_hour'", "2031-03-01"),
    ("text-in-numeric", _set("distance", 3, "abc", as_text=True), "'distance'", "'abc'"),
    ("all-null-slice", _all_null, "'carrier'", "None"),
    ("half-the-rows", lambda f: f.iloc[::2], MONTH, " a day), -4"),  # rows per day: March near the mean
    ("whole-month-shifted", _shift_all, "'arr_delay'", "target_mean"),
]


@pytest.mark.parametrize(("mutate", "column", "value"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_blocked_and_nothing_changes(stack: Stack, mutate, column: str, value: str, request) -> None:
    before = _state(stack)
    flights = mutate(stack.tables["flights"].copy(deep=True)).reset_index(drop=True)

    result = _feed(stack, {**stack.tables, "flights": flights}, request.node.callspec.id)

    assert not result.success
    message = _failure(result)
    assert column in message and value in message, message
    assert f"partition {MONTH} was not ingested" in message
    assert _state(stack) == before


def test_offending_values_are_named(stack: Stack) -> None:
    """Two variants whose offending value depends on the data: the duplicated key, the halved row count."""
    flights = stack.tables["flights"]
    message = _failure(_feed(stack, {**stack.tables, "flights": _duplicate(flights.copy())}, "dup-value"))
    assert f"'flight': {int(flights.loc[10, 'flight'])}" in message, message
    half = flights.iloc[::2].reset_index(drop=True)
    message = _failure(_feed(stack, {**stack.tables, "flights": half}, "half-value"))
    found = re.search(rf"partition {MONTH}: {len(half)} rows over (\d+) days \(([\d.]+) a day\), ([+-]\d+)% vs the "
                      r"mean ([\d.]+) rows a day", message)
    assert found, message  # the rows, the days they span, and the change per day against the other partitions
    days, rate, change, mean = int(found[1]), float(found[2]), int(found[3]), float(found[4])
    assert 31 <= days <= 32 and abs(rate - len(half) / days) < 0.01 and change == round((rate / mean - 1) * 100)


def test_the_same_path_accepts_the_real_month(stack: Stack) -> None:
    """The control: unmodified tables through the same prepared-files path become the next data version."""
    before = _state(stack)
    result = _feed(stack, stack.tables, "control")
    assert result.success
    after = _state(stack)
    assert after["head"] != before["head"] and after["champion"] == before["champion"]
    assert after["versions"] == [*before["versions"], f"{MONTH}.{after['head'][:8]}"]  # its readable key
    assert all(after["bytes"][v] == b for v, b in before["bytes"].items())
    commit = stack.store.get_commit(raw_repo(stack.cfg), after["head"])
    assert commit.parents[0] == before["head"] and commit.metadata["dagster_run_id"] == result.run_id
    assert commit.metadata["::lakefs::Dagster::url[url:ui]"].endswith(f"/runs/{result.run_id}")


def _bom_headers(w: pd.DataFrame) -> pd.DataFrame:
    return w.rename(columns={c: "\ufeff" + c for c in w.columns})  # a CSV export's byte-order mark, every header


def _text_visibility(w: pd.DataFrame) -> pd.DataFrame:
    w["visib"] = w["visib"].astype(str)
    w.loc[4, "visib"] = "ten miles"
    return w


# (id, the tables MONTH is delivered with, the table named, what the message says)
BAD_TABLES: list[tuple[str, Callable[[dict[str, pd.DataFrame]], dict[str, pd.DataFrame]], str, str]] = [
    ("weather-bom-headers", lambda t: {**t, "weather": _bom_headers(t["weather"].copy())}, "'weather'",
     "column 'origin' is missing"),
    ("weather-missing", lambda t: {"flights": t["flights"]}, "'weather'", "is missing in partition"),
    ("weather-text-visibility", lambda t: {**t, "weather": _text_visibility(t["weather"].copy())}, "'weather'",
     "'ten miles'"),
    ("undeclared-table", lambda t: {**t, "planes": t["weather"].head(3)}, "'planes'", "not declared"),
]


@pytest.mark.parametrize(("deliver", "table", "says"), [b[1:] for b in BAD_TABLES], ids=[b[0] for b in BAD_TABLES])
def test_every_table_is_validated_before_the_merge(stack: Stack, deliver, table: str, says: str, request) -> None:
    before = _state(stack)
    result = _feed(stack, deliver(dict(stack.tables)), request.node.callspec.id)
    assert not result.success
    message = _failure(result)
    assert f"table {table}" in message and says in message, message
    assert _state(stack) == before


def test_a_truncated_file_is_named(stack: Stack) -> None:
    before = _state(stack)
    directory = stack.work / "truncated"
    directory.mkdir(parents=True)
    for table, frame in stack.tables.items():
        frame.to_parquet(directory / f"{table}.parquet", index=False)
    data = (directory / "weather.parquet").read_bytes()
    (directory / "weather.parquet").write_bytes(data[: len(data) // 2])
    op = DatasetKeys.of(stack.cfg).raw.to_python_identifier()
    result = stack.defs.resolve_job_def(ingest_job_name(stack.cfg)).execute_in_process(
        instance=stack.instance, partition_key=MONTH, raise_on_error=False,
        run_config={**QUIET, "ops": {op: {"config": {"delivered": str(directory)}}}})
    message = _failure(result)
    assert f"{directory / 'weather.parquet'}: not readable Parquet" in message, message
    assert _state(stack) == before


def test_zz_the_same_month_again_is_a_no_op_that_says_so(stack: Stack) -> None:
    """After the control landed MONTH: the same tables again give the same data version, no partition, no run."""
    before = _state(stack)
    result = _feed(stack, stack.tables, "again")
    assert result.success
    ingested = RecordFiles(paths.records_root()).read(DatasetKeys.of(stack.cfg).raw.path, MONTH, Ingested)
    assert not ingested.created and ingested.data_version == before["head"], ingested.message
    assert _state(stack) == before  # no commit, no new data-version partition
    assert "the same tables are already on main" in ingested.message
