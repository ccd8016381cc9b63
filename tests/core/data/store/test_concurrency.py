"""Writer processes on every backend: racing ingests never mix, a killed writer leaves the head intact.

Writers are forked processes released together by a ``multiprocessing.Barrier``; each ingests its own set
of objects through ``VersionedStore.transaction`` into the same branch.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import pytest

from mlassets.core.data.store import Conflict, NotFound, VersionedStore

pytestmark = pytest.mark.e2e  # slow (processes, kills, memory): in `make test`, not `make test-fast`

REPS = 20
WRITERS = ("w1", "w2")


def _ctx() -> Any:
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def _ingest(store: VersionedStore, repo: str, name: str, paths: list[str], barrier: Any, results: Any) -> None:
    try:
        barrier.wait(timeout=30)
        with store.transaction(repo, "main", f"ingest by {name}", {"writer": name}) as tx:
            for path in paths:
                tx.put(path, f"{name}:{path}".encode())
        assert tx.commit is not None
        results.put((name, "landed", tx.base, tx.commit.id))
    except Conflict as exc:
        results.put((name, "conflict", str(exc), ""))
    except BaseException as exc:  # reported, never a hung parent
        results.put((name, "error", repr(exc), ""))


def _race(store: VersionedStore, repo: str, sets: dict[str, list[str]]) -> dict[str, tuple[str, str, str]]:
    ctx = _ctx()
    barrier, results = ctx.Barrier(len(sets)), ctx.Queue()
    procs = [ctx.Process(target=_ingest, args=(store, repo, name, paths, barrier, results))
             for name, paths in sets.items()]
    for p in procs:
        p.start()
    try:
        return {name: rest for name, *rest in (results.get(timeout=60) for _ in procs)}
    finally:
        for p in procs:
            p.join(timeout=30)


@pytest.mark.parametrize("overlap", [False, True], ids=["disjoint", "overlapping"])
def test_racing_ingests_both_land_or_one_conflicts_never_mix(store: VersionedStore, repo: str, overlap: bool) -> None:
    conflicts = concurrent = 0
    for rep in range(REPS):
        sets = {w: [f"{w}/{rep}/{i}.parquet" for i in range(3)] + ([f"shared/{rep}.json"] if overlap else [])
                for w in WRITERS}
        start, before = store.resolve(repo, "main"), set(store.list_objects(repo, "main"))
        outcome = _race(store, repo, sets)
        assert {kind for kind, *_ in outcome.values()} <= {"landed", "conflict"}, outcome
        landed = [w for w in WRITERS if outcome[w][0] == "landed"]
        assert landed, outcome
        new = set(store.list_objects(repo, "main")) - before
        assert new == {p for w in landed for p in sets[w]}, (rep, outcome)  # all of a writer, or none of it
        for w in landed:  # each landed writer's own bytes (and the shared object's, when it alone landed)
            for path in sets[w][:1] + (sets[w][-1:] if overlap and len(landed) == 1 else []):
                assert store.read(repo, "main", path) == f"{w}:{path}".encode()
        log = store.log(repo, "main", limit=len(landed) + 1)
        assert {c.id for c in log[:len(landed)]} == {outcome[w][2] for w in landed}
        assert log[len(landed)].id == start
        if len(landed) == 1:
            conflicts += 1
            loser = next(w for w in WRITERS if w not in landed)
            assert "conflicts" in outcome[loser][1] and f"shared/{rep}.json" in outcome[loser][1], outcome
        elif overlap:  # both landed only one after the other: the later one started from the earlier one
            bases = {outcome[w][1] for w in WRITERS}
            assert bases & {outcome[w][2] for w in WRITERS}, outcome
        else:
            concurrent += len({outcome[w][1] for w in WRITERS}) == 1  # both started from the same head
    if overlap:
        assert conflicts >= 1, "no rep raced: the barrier did not make the writers overlap"
    else:
        assert conflicts == 0 and concurrent >= 1, "no rep raced: the barrier did not make the writers overlap"


def _hang(event: Any) -> Any:
    def hang(*args: object, **kwargs: object) -> None:
        event.set()
        time.sleep(120)

    return hang


def _doomed_writer(store: VersionedStore, repo: str, phase: str, event: Any) -> None:
    if phase == "landing":  # block inside the landing step itself, then get killed there
        if store.backend == "local":
            from mlassets.core.data.store import local_db

            local_db.insert_commit = _hang(event)  # inside BEGIN IMMEDIATE: holds sqlite's write lock
        else:
            import lakefs_sdk

            lakefs_sdk.RefsApi.merge_into_branch = _hang(event)  # after the short-lived branch's commit
    with store.transaction(repo, "main", "doomed") as tx:
        for i in range(6):
            tx.put(f"doomed/{i}", b"x" * 1000)
            if i == 2 and phase == "writing":
                _hang(event)()
        tx.delete("old/0")


@pytest.mark.parametrize("phase", ["writing", "landing"])
def test_writer_killed_mid_transaction_leaves_old_head(store: VersionedStore, repo: str, phase: str) -> None:
    old = store.commit(repo, "main", {f"old/{i}": f"old {i}".encode() for i in range(3)}, "old head")
    ctx = _ctx()
    event = ctx.Event()
    proc = ctx.Process(target=_doomed_writer, args=(store, repo, phase, event))
    proc.start()
    try:
        assert event.wait(timeout=30), "the writer never reached the point where it is killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.join(timeout=30)
    assert proc.exitcode == -signal.SIGKILL
    assert store.resolve(repo, "main") == old.id
    assert store.list_branches(repo) == {"main": old.id}
    assert store.list_objects(repo, "main") == ["old/0", "old/1", "old/2"]
    assert [store.read(repo, "main", f"old/{i}") for i in range(3)] == [f"old {i}".encode() for i in range(3)]
    assert [c.id for c in store.log(repo, "main")][:1] == [old.id]
    after = store.commit(repo, "main", {"next": b"n"}, "the store still works", expected_head=old.id)
    assert store.resolve(repo, "main") == after.id
    # What the killed writer left behind: lakeFS keeps its hidden branch until pruned; local keeps nothing.
    assert store.prune_transactions(repo) == []  # it began moments ago: it might still be in flight
    pruned = store.prune_transactions(repo, older_than_s=0)
    assert len(pruned) == (1 if store.backend == "lakefs" else 0)
    assert _hidden_branches(store, repo) == []
    assert store.prune_transactions(repo, older_than_s=0) == []


def _hidden_branches(store: VersionedStore, repo: str) -> list[str]:
    if store.backend != "lakefs":
        return []
    from mlassets.core.data.store.lakefs_tx import TX_PREFIX

    page = store.api.branches_api.list_branches(repo, prefix=TX_PREFIX, show_hidden=True)
    return [r.id for r in page.results]


def test_pruning_leaves_a_transaction_in_flight_alone(store: VersionedStore, repo: str) -> None:
    with store.transaction(repo, "main", "in flight") as tx:
        tx.put("a", b"a")
        assert len(_hidden_branches(store, repo)) == (1 if store.backend == "lakefs" else 0)
        assert store.prune_transactions(repo, older_than_s=3600) == []
        tx.put("b", b"b")
    assert store.list_objects(repo, "main") == ["a", "b"] and _hidden_branches(store, repo) == []
    with pytest.raises(NotFound, match="nope"):
        store.prune_transactions("nope")
