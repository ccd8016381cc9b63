"""``VersionedStore.transaction`` on every backend: writes through a short-lived branch, landed as one commit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from mlassets.core.data.store import Change, Conflict, InvalidName, NotFound, StoreError, VersionedStore


class Boom(Exception):
    pass


def head(store: VersionedStore, repo: str) -> str:
    return store.resolve(repo, "main")


def test_lands_as_one_commit_invisible_until_then(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    with store.transaction(repo, "main", "Ingest 2013-01", {"month": "2013-01"}) as tx:
        assert tx.base == root and tx.commit is None
        tx.put("raw/flights/2013-01.parquet", b"P" * 1000)
        tx.put("raw/weather/2013-01.parquet", bytearray(b"W" * 10))
        assert head(store, repo) == root
        assert store.list_objects(repo, "main") == []
        assert store.list_branches(repo) == {"main": root}  # the short-lived branch is not listed
    c = tx.commit
    assert c is not None and c.parents == (root,)
    assert (c.message, dict(c.metadata)) == ("Ingest 2013-01", {"month": "2013-01"})
    assert head(store, repo) == c.id and store.get_commit(repo, "main") == c
    assert store.list_objects(repo, c.id) == ["raw/flights/2013-01.parquet", "raw/weather/2013-01.parquet"]
    assert store.read(repo, c.id, "raw/weather/2013-01.parquet") == b"W" * 10
    assert store.list_branches(repo) == {"main": c.id}
    assert [x.id for x in store.log(repo, "main")] == [c.id, root]


def test_error_inside_lands_nothing_and_closes_the_writer(store: VersionedStore, repo: str) -> None:
    before = store.commit(repo, "main", {"a": b"1"}, "before").id
    with pytest.raises(Boom), store.transaction(repo, "main", "fails") as tx:
        tx.put("b", b"2")
        tx.delete("a")
        raise Boom
    assert tx.commit is None
    assert head(store, repo) == before
    assert store.list_objects(repo, "main") == ["a"]
    assert store.list_branches(repo) == {"main": before}
    with pytest.raises(StoreError, match="closed"):
        tx.put("c", b"3")


def test_put_and_delete_in_one_transaction(store: VersionedStore, repo: str) -> None:
    store.commit(repo, "main", {"old": b"o", "keep": b"k"}, "base")
    with store.transaction(repo, "main", "mixed") as tx:
        tx.delete("old")
        tx.put("tmp", b"t")
        tx.delete("tmp")  # put then deleted in the same transaction
        tx.put("new", b"n")
        with pytest.raises(NotFound, match="never-there"):
            tx.delete("never-there")
        with pytest.raises(NotFound, match="old"):
            tx.delete("old")  # already deleted here
    assert store.list_objects(repo, "main") == ["keep", "new"]
    assert store.read(repo, "main", "new") == b"n"


def test_interleaved_transactions_on_disjoint_paths_both_land(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    with store.transaction(repo, "main", "one") as one:
        one.put("one/a", b"1a")
        with store.transaction(repo, "main", "two") as two:
            two.put("two/a", b"2a")
            one.put("one/b", b"1b")
        assert two.commit is not None and two.commit.parents == (root,)
    assert one.commit is not None and one.commit.parents == (two.commit.id,)
    assert store.list_objects(repo, "main") == ["one/a", "one/b", "two/a"]
    assert store.diff(repo, two.commit.id, one.commit.id) == [Change("one/a", "added"), Change("one/b", "added")]


def test_same_path_changed_by_both_the_later_one_conflicts(store: VersionedStore, repo: str) -> None:
    store.commit(repo, "main", {"shared.csv": b"base"}, "base")
    with pytest.raises(Conflict, match="shared.csv"):
        with store.transaction(repo, "main", "outer") as outer:
            outer.put("shared.csv", b"outer")
            outer.put("outer-only", b"o")
            with store.transaction(repo, "main", "inner") as inner:
                inner.put("shared.csv", b"inner")
                inner.put("inner-only", b"i")
    assert inner.commit is not None and head(store, repo) == inner.commit.id
    assert store.list_objects(repo, "main") == ["inner-only", "shared.csv"]
    assert store.read(repo, "main", "shared.csv") == b"inner"
    assert outer.commit is None


def test_expected_head_checked_at_start_and_at_landing(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    moved = store.commit(repo, "main", {"a": b"1"}, "moves").id
    with pytest.raises(Conflict, match=root), store.transaction(repo, "main", "stale", expected_head=root):
        pytest.fail("a stale expected head must fail before the body runs")
    with pytest.raises(Conflict, match=moved):
        with store.transaction(repo, "main", "cas", expected_head=moved) as tx:
            tx.put("mine", b"m")
            store.commit(repo, "main", {"theirs": b"t"}, "sneaks in")
    assert "mine" not in store.list_objects(repo, "main")
    current = head(store, repo)
    with store.transaction(repo, "main", "cas ok", expected_head=current) as tx:
        tx.put("mine", b"m")
    assert tx.commit is not None and tx.commit.parents == (current,)
    assert store.list_objects(repo, "main") == ["a", "mine", "theirs"]


def test_nothing_to_land_keeps_the_head_unless_allow_empty(store: VersionedStore, repo: str) -> None:
    c = store.commit(repo, "main", {"a": b"1"}, "a")
    with store.transaction(repo, "main", "nothing") as tx:
        pass
    assert tx.commit is not None and tx.commit.id == c.id
    with store.transaction(repo, "main", "same bytes again") as tx:
        tx.put("a", b"1")
    assert tx.commit is not None and tx.commit.id == c.id and head(store, repo) == c.id
    with store.transaction(repo, "main", "empty on purpose", {"k": "v"}, allow_empty=True) as tx:
        pass
    assert tx.commit is not None and tx.commit.parents == (c.id,) and head(store, repo) == tx.commit.id
    assert store.diff(repo, c.id, tx.commit.id) == []


def test_bad_arguments_fail_before_anything_is_written(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    with pytest.raises(InvalidName, match="bad name"), store.transaction(repo, "bad name", "m"):
        pass
    with pytest.raises(ValueError, match="rows"), store.transaction(repo, "main", "m", {"rows": 3}):  # type: ignore[dict-item]
        pass
    with pytest.raises(NotFound, match="ghost"), store.transaction(repo, "ghost", "m"):
        pass
    with store.transaction(repo, "main", "m") as tx:
        with pytest.raises(InvalidName, match=r"\.\./x"):
            tx.put("../x", b"1")
        with pytest.raises(TypeError, match="str"):
            tx.put("a", "text")  # type: ignore[arg-type]
    assert head(store, repo) == root and store.list_objects(repo, "main") == []


def test_delete_repo(store: VersionedStore, repo_name: str) -> None:
    store.create_repo(repo_name)
    commit = store.commit(repo_name, "main", {"a": b"1"}, "a")
    assert store.read(repo_name, commit.id, "a") == b"1"  # read at the commit (a local store keeps its tree)
    store.delete_repo(repo_name)
    assert repo_name not in store.list_repos()
    with pytest.raises(NotFound, match=repo_name):
        store.resolve(repo_name, "main")
    with pytest.raises(NotFound, match=repo_name):
        store.read(repo_name, commit.id, "a")  # not from what was kept
    with pytest.raises(NotFound, match=repo_name):
        store.delete_repo(repo_name)


def test_stage_gives_a_readable_commit_before_anything_lands(store: VersionedStore, repo: str) -> None:
    root = head(store, repo)
    with store.transaction(repo, "main", "validated ingest", {"month": "2013-01"}) as tx:
        tx.put("a", b"1")
        staged = tx.stage()
        assert staged.parents == (root,) and store.resolve(repo, staged.id) == staged.id
        assert store.list_objects(repo, staged.id) == ["a"] and store.read(repo, staged.id, "a") == b"1"
        assert store.diff(repo, root, staged.id) == [Change("a", "added")]
        assert head(store, repo) == root  # staged, not landed
        tx.put("b", b"2")  # still writable after staging
        tx.metadata["staged_commit"] = staged.id
    assert tx.commit is not None and tx.commit.parents == (root,)
    assert dict(tx.commit.metadata) == {"month": "2013-01", "staged_commit": staged.id}
    assert store.list_objects(repo, "main") == ["a", "b"]
    landed = tx.commit.id
    with pytest.raises(Boom), store.transaction(repo, "main", "rejected after validation") as tx:
        tx.put("c", b"3")
        rejected = tx.stage()
        assert store.read(repo, rejected.id, "c") == b"3"
        raise Boom
    assert head(store, repo) == landed and "c" not in store.list_objects(repo, "main")
    assert store.list_branches(repo) == {"main": landed}


def test_a_transaction_may_be_staged_from_another_thread(store: VersionedStore, repo: str) -> None:
    with store.transaction(repo, "main", "staged elsewhere") as tx, ThreadPoolExecutor(1) as pool:
        tx.put("a", b"1")
        staged = pool.submit(tx.stage).result()
        assert store.read(repo, staged.id, "a") == b"1"
    assert tx.commit is not None and store.list_objects(repo, "main") == ["a"]


def test_put_file_writes_the_files_bytes_and_reads_back_as_a_local_file(store: VersionedStore, repo: str,
                                                                        tmp_path) -> None:
    from mlassets.core.data.batches import object_file

    data = bytes(range(256)) * 5000  # more than one chunk of the local store's copy
    source = tmp_path / "table.parquet"
    source.write_bytes(data)
    with store.transaction(repo, "main", "from a file") as tx:
        tx.put_file("raw/flights/2013-01.parquet", source)
        tx.put_file("raw/flights/2013-02.parquet", source)  # the same bytes twice: stored once where the store can
    commit = tx.commit
    assert store.read(repo, commit.id, "raw/flights/2013-01.parquet") == data
    assert store.stat(repo, commit.id, "raw/flights/2013-02.parquet")["size"] == len(data)
    with object_file(store, repo, commit.id, "raw/flights/2013-01.parquet") as local:
        assert local.read_bytes() == data
    with pytest.raises(StoreError, match="closed"):
        tx.put_file("c", source)
