"""The ``VersionedStore`` contract, part 2: tags, branches, merge, names and racing writers (every backend)."""

from __future__ import annotations

import multiprocessing
import re

import pytest

from mlassets.core.data.store import Conflict, InvalidName, NotFound, VersionedStore

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def head(store: VersionedStore, repo: str, branch: str = "main") -> str:
    return store.resolve(repo, branch)


# ---------------------------------------------------------------- tags and branches


def test_tags(store: VersionedStore, repo: str) -> None:
    c1 = store.commit(repo, "main", {"a": b"1"}, "v1")
    assert store.create_tag(repo, "v1.0", "main") == c1.id
    store.commit(repo, "main", {"a": b"2"}, "v2")
    assert store.list_tags(repo) == {"v1.0": c1.id}
    assert store.resolve(repo, "v1.0") == c1.id
    assert store.read(repo, "v1.0", "a") == b"1"
    with pytest.raises(Conflict, match="v1.0"):
        store.create_tag(repo, "v1.0", "main")
    assert store.list_tags(repo) == {"v1.0": c1.id}
    with pytest.raises(NotFound, match="nope"):
        store.create_tag(repo, "v2.0", "nope")


def test_branch_from_commit_is_isolated(store: VersionedStore, repo: str) -> None:
    c1 = store.commit(repo, "main", {"a": b"1"}, "v1")
    c2 = store.commit(repo, "main", {"a": b"2"}, "v2")
    assert store.create_branch(repo, "old", c1.id) == c1.id
    assert store.list_branches(repo) == {"main": c2.id, "old": c1.id}
    store.commit(repo, "old", {"b": b"x"}, "on old")
    assert store.read(repo, "old", "a") == b"1"
    assert store.list_objects(repo, "main") == ["a"]
    assert store.read(repo, "main", "a") == b"2"


def test_branch_from_tag_and_branch(store: VersionedStore, repo: str) -> None:
    c1 = store.commit(repo, "main", {"a": b"1"}, "v1")
    store.create_tag(repo, "t1", c1.id)
    assert store.create_branch(repo, "from-tag", "t1") == c1.id
    assert store.create_branch(repo, "from-branch", "main") == c1.id


def test_create_branch_errors(store: VersionedStore, repo: str) -> None:
    store.create_branch(repo, "dev", "main")
    with pytest.raises(Conflict, match="dev"):
        store.create_branch(repo, "dev", "main")
    with pytest.raises(NotFound, match="ghost"):
        store.create_branch(repo, "other", "ghost")
    assert "other" not in store.list_branches(repo)


def test_delete_branch(store: VersionedStore, repo: str) -> None:
    c = store.commit(repo, "main", {"a": b"1"}, "m")
    store.create_branch(repo, "dev", "main")
    dev = store.commit(repo, "dev", {"b": b"2"}, "on dev")
    store.delete_branch(repo, "dev")
    assert store.list_branches(repo) == {"main": c.id}
    assert store.read(repo, dev.id, "b") == b"2"  # commits outlive their branch
    with pytest.raises(NotFound, match="dev"):
        store.delete_branch(repo, "dev")
    with pytest.raises(Conflict, match="main"):
        store.delete_branch(repo, "main")
    assert store.list_branches(repo) == {"main": c.id}


# ---------------------------------------------------------------- merge


def test_merge_disjoint_changes(store: VersionedStore, repo: str) -> None:
    store.commit(repo, "main", {"base": b"0"}, "base")
    store.create_branch(repo, "feature", "main")
    ours = store.commit(repo, "main", {"main-file": b"m"}, "on main")
    theirs = store.commit(repo, "feature", {"feature-file": b"f", "base": None}, "on feature")
    merged = store.merge(repo, "feature", "main", metadata={"by": "test"})
    assert merged.parents == (ours.id, theirs.id)
    assert merged.message == "Merge 'feature' into 'main'"
    assert dict(merged.metadata) == {"by": "test"}
    assert head(store, repo) == merged.id
    assert store.list_objects(repo, "main") == ["feature-file", "main-file"]
    assert store.read(repo, "main", "feature-file") == b"f"
    assert store.read(repo, "main", "main-file") == b"m"
    assert head(store, repo, "feature") == theirs.id  # source untouched


def test_merge_custom_message_and_same_change_on_both_sides(store: VersionedStore, repo: str) -> None:
    store.create_branch(repo, "feature", "main")
    store.commit(repo, "main", {"same": b"x"}, "main")
    store.commit(repo, "feature", {"same": b"x", "other": b"y"}, "feature")
    merged = store.merge(repo, "feature", "main", message="bring feature in")
    assert merged.message == "bring feature in"
    assert store.list_objects(repo, "main") == ["other", "same"]


def test_merge_conflict_raises_and_leaves_destination(store: VersionedStore, repo: str) -> None:
    store.commit(repo, "main", {"shared.txt": b"base", "x": b"1"}, "base")
    store.create_branch(repo, "feature", "main")
    ours = store.commit(repo, "main", {"shared.txt": b"main version"}, "main edit")
    store.commit(repo, "feature", {"shared.txt": b"feature version", "y": b"2"}, "feature edit")
    with pytest.raises(Conflict, match="shared.txt"):
        store.merge(repo, "feature", "main")
    assert head(store, repo) == ours.id
    assert store.read(repo, "main", "shared.txt") == b"main version"
    assert store.list_objects(repo, "main") == ["shared.txt", "x"]


def test_merge_of_ancestor_is_noop(store: VersionedStore, repo: str) -> None:
    store.commit(repo, "main", {"a": b"1"}, "a")
    store.create_branch(repo, "stale", "main")
    current = store.commit(repo, "main", {"b": b"2"}, "b")
    result = store.merge(repo, "stale", "main")
    assert result.id == current.id
    assert head(store, repo) == current.id
    assert len(store.log(repo, "main")) == 3


def test_merge_fast_forwardable_source(store: VersionedStore, repo: str) -> None:
    store.create_branch(repo, "feature", "main")
    theirs = store.commit(repo, "feature", {"new": b"n"}, "feature")
    merged = store.merge(repo, "feature", "main")
    assert theirs.id in merged.parents
    assert store.read(repo, "main", "new") == b"n"
    assert store.diff(repo, "feature", "main") == []


def test_merge_unknown_branch(store: VersionedStore, repo: str) -> None:
    with pytest.raises(NotFound, match="ghost"):
        store.merge(repo, "ghost", "main")
    with pytest.raises(NotFound, match="ghost"):
        store.merge(repo, "main", "ghost")


# ---------------------------------------------------------------- names


@pytest.mark.parametrize("name", ["Bad_Repo", "ab", "../x", "-abc", "repo\n", "a" * 64, ""])
def test_invalid_repo_names(store: VersionedStore, name: str) -> None:
    with pytest.raises(InvalidName) as info:
        store.create_repo(name)
    assert repr(name) in str(info.value)
    with pytest.raises(InvalidName):
        store.resolve(name, "main")


@pytest.mark.parametrize("name", ["../x", "a..b", "-dash", "has space", "a/b", "main\n", ""])
def test_invalid_ref_names(store: VersionedStore, repo: str, name: str) -> None:
    for call in (
        lambda: store.create_branch(repo, name, "main"),
        lambda: store.create_tag(repo, name, "main"),
        lambda: store.resolve(repo, name),
        lambda: store.commit(repo, name, {"a": b"1"}, "m"),
    ):
        with pytest.raises(InvalidName) as info:
            call()
        assert repr(name) in str(info.value)


@pytest.mark.parametrize(
    "path", ["../x", "/abs", "a//b", "a/./b", "a/../b", "trailing/", "sp ace", "a\n", ""]
)
def test_invalid_paths(store: VersionedStore, repo: str, path: str) -> None:
    before = head(store, repo)
    with pytest.raises(InvalidName) as info:
        store.commit(repo, "main", {"ok.txt": b"1", path: b"2"}, "m")
    assert repr(path) in str(info.value)
    assert head(store, repo) == before
    with pytest.raises(InvalidName):
        store.read(repo, "main", path)


# ---------------------------------------------------------------- concurrency across processes


def _mp_context() -> multiprocessing.context.BaseContext:
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def _race_worker(store, repo, name, expected_head, commits, barrier, results) -> None:
    try:
        barrier.wait(timeout=20)
        for i in range(commits):
            change = {f"{name}/{i}": name.encode()}
            store.commit(repo, "main", change, f"{name} {i}", expected_head=expected_head)
        results.put((name, "won"))
    except Conflict as exc:
        results.put((name, f"conflict: {exc}"))
    except BaseException as exc:  # report, never hang the parent
        results.put((name, f"error: {exc!r}"))


def _race(store: VersionedStore, repo: str, expected_head: str | None, commits: int = 1) -> dict[str, str]:
    ctx = _mp_context()
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_race_worker, args=(store, repo, name, expected_head, commits, barrier, results))
        for name in ("p1", "p2")
    ]
    for p in procs:
        p.start()
    try:
        outcome = dict(results.get(timeout=60) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return outcome


def test_race_same_expected_head_exactly_one_wins(store: VersionedStore, repo: str) -> None:
    for _ in range(5):
        start = head(store, repo)
        outcome = _race(store, repo, expected_head=start)
        assert sorted(v.split(":")[0] for v in outcome.values()) == ["conflict", "won"], outcome
        winner = next(name for name, v in outcome.items() if v == "won")
        new_head = store.get_commit(repo, "main")
        assert new_head.parents == (start,)
        assert new_head.message == f"{winner} 0"


def test_race_without_expected_head_both_land(store: VersionedStore, repo: str) -> None:
    outcome = _race(store, repo, expected_head=None, commits=5)
    assert outcome == {"p1": "won", "p2": "won"}
    log = store.log(repo, "main")
    assert len(log) == 11
    assert sorted(c.message for c in log[:-1]) == sorted(f"{n} {i}" for n in ("p1", "p2") for i in range(5))
    assert store.list_objects(repo, "main") == sorted(f"{n}/{i}" for n in ("p1", "p2") for i in range(5))
