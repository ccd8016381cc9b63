"""The ``VersionedStore`` contract: every backend (see conftest.BACKENDS) must pass all of it."""

from __future__ import annotations

import hashlib
import multiprocessing
import re

import pytest

from mlassets.core.store import Change, Commit, Conflict, InvalidName, NotFound, VersionedStore

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
