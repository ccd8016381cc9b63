"""LocalStore only: a crash after the objects are written but before the branch moves changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlassets.core.data.store import local_db
from mlassets.core.data.store.local import LocalStore


class Crash(RuntimeError):
    pass


def _crash(*args: object, **kwargs: object) -> None:
    raise Crash("simulated crash")


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    store = LocalStore(tmp_path)
    store.create_repo("crash")
    store.commit("crash", "main", {"a": b"old"}, "before")
    return store


@pytest.mark.parametrize("target", ["transaction", "insert_commit"])
def test_crash_before_or_inside_transaction_leaves_head(
    store: LocalStore, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    before = store.resolve("crash", "main")
    monkeypatch.setattr(local_db, target, _crash)
    with pytest.raises(Crash):
        store.commit("crash", "main", {"a": b"new", "b": b"added"}, "crashes")
    monkeypatch.undo()
    assert store.resolve("crash", "main") == before
    assert store.read("crash", "main", "a") == b"old"
    assert store.list_objects("crash", "main") == ["a"]
    assert len(store.log("crash", "main")) == 2
    # the store is still usable afterwards (no lock left behind)
    after = store.commit("crash", "main", {"b": b"added"}, "works", expected_head=before)
    assert store.resolve("crash", "main") == after.id


def test_crash_inside_merge_leaves_destination(store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.create_branch("crash", "feature", "main")
    store.commit("crash", "feature", {"f": b"1"}, "feature")
    before = store.resolve("crash", "main")
    monkeypatch.setattr(local_db, "insert_commit", _crash)
    with pytest.raises(Crash):
        store.merge("crash", "feature", "main")
    monkeypatch.undo()
    assert store.resolve("crash", "main") == before
    assert store.list_objects("crash", "main") == ["a"]
