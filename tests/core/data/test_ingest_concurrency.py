"""Two ingests of one partition at once (spawned processes, released together): one data version, or one
data version and one clear conflict; never two versions, never a mix of both deliveries."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.raw import WATCHED_BRANCH, partition_tables, raw_repo, read_table
from mlassets.core.data.store import Conflict
from mlassets.core.data.store.local import LocalStore
from tests.conftest import small_flights

pytestmark = pytest.mark.e2e  # slow (processes, kills, memory): in `make test`, not `make test-fast`

JAN, FEB = "2013-01", "2013-02"


def _ingest(root: str, shift: float, barrier, results) -> None:  # noqa: ANN001 - multiprocessing proxies
    cfg = small_flights()
    tables = partition_tables(cfg, FEB)
    flights = tables["flights"].copy()
    flights.loc[0, "arr_delay"] = flights.loc[0, "arr_delay"] + shift
    store = LocalStore(root)
    barrier.wait(timeout=120)
    try:
        ingested = ingest_partition(store, cfg, FEB, {**tables, "flights": flights})
        results.put(("created" if ingested.created else "unchanged", ingested.data_version))
    except Conflict as exc:
        results.put(("conflict", str(exc)))


def _race(root: Path, shifts: tuple[float, float]) -> list[tuple[str, str]]:
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    workers = [ctx.Process(target=_ingest, args=(str(root), s, barrier, results)) for s in shifts]
    for w in workers:
        w.start()
    outcomes = [results.get(timeout=180) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    return sorted(outcomes)


def _store_with_january(tmp_path: Path) -> tuple[LocalStore, str]:
    cfg = small_flights()
    store = LocalStore(tmp_path / "store")
    return store, ingest_partition(store, cfg, JAN, partition_tables(cfg, JAN)).data_version


def test_the_same_delivery_twice_at_once_is_one_data_version(tmp_path: Path) -> None:
    store, january = _store_with_january(tmp_path)
    (first, version), (second, same) = _race(tmp_path / "store", (0.0, 0.0))
    assert (first, second) == ("created", "unchanged") and version == same
    head = store.resolve(raw_repo(small_flights()), WATCHED_BRANCH)
    assert head == version and store.get_commit("flights", head).parents == (january,)


def test_two_different_deliveries_at_once_are_one_version_and_one_conflict(tmp_path: Path) -> None:
    store, january = _store_with_january(tmp_path)
    outcomes = _race(tmp_path / "store", (1.0, 2.0))
    assert [kind for kind, _ in outcomes] == ["conflict", "created"], outcomes
    assert "conflicts with a concurrent commit" in outcomes[0][1] and "raw/flights/2013-02.parquet" in outcomes[0][1]
    cfg = small_flights()
    head = store.resolve(raw_repo(cfg), WATCHED_BRANCH)
    assert head == outcomes[1][1] and store.get_commit("flights", head).parents == (january,)
    landed = read_table(store, cfg, head, "flights")
    original = partition_tables(cfg, FEB)["flights"].loc[0, "arr_delay"]
    delta = landed[landed["month"] == 2]["arr_delay"].iloc[0] - original
    assert delta in (1.0, 2.0)  # one whole delivery, not a mix
