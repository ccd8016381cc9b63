"""Data-version partition keys: readable, sortable, valid everywhere a key goes, and one mapping both ways."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mlassets.core.config import parse_config
from mlassets.core.data.raw import WATCHED_BRANCH, raw_repo
from mlassets.core.data.store.base import validate_ref
from mlassets.core.data.store.local import LocalStore
from mlassets.core.data.version_keys import (
    check_version_key,
    key_of,
    matching,
    resolve_key,
    shown,
    version_key,
    version_map,
)
from mlassets.core.records import RecordFiles
from mlassets.core.train.synthetic import tiny_config

COMMIT = "6870220f" + "ab" * 16


def test_a_key_names_the_partitions_and_a_short_id() -> None:
    assert version_key(["2013-03"], COMMIT) == "2013-03.6870220f"
    assert version_key(["2009"], COMMIT) == "2009.6870220f"  # a bare year
    assert version_key(["2013-01", "2013-02"], COMMIT) == "2013-01_2013-02.6870220f"
    assert version_key([f"2013-0{m}" for m in range(1, 8)], COMMIT) == "2013-01_2013-02_2013-03_4more.6870220f"
    assert version_key([], COMMIT) == "data.6870220f"  # a commit whose partition is unknown still gets one
    assert version_key(["v1.2", "region=eu"], COMMIT) == "v1-2_region-eu.6870220f"  # one '.' only: the id's
    assert version_key(["x" * 300], COMMIT) == "x" * 100 + ".6870220f"
    with pytest.raises(ValueError, match="not a store commit id"):
        version_key(["2013-03"], "2013-03")


def test_keys_sort_by_partition_and_are_valid_dagster_keys_store_refs_and_file_names(tmp_path: Path) -> None:
    keys = [version_key([m], c * 40) for m, c in (("2013-03", "1"), ("2013-01", "f"), ("2013-02", "0"))]
    assert sorted(keys) == ["2013-01.ffffffff", "2013-02.00000000", "2013-03.11111111"]
    files = RecordFiles(tmp_path)
    for key in [*keys, version_key([], COMMIT), version_key(["a_b", "c-d", "e=f", "g.h"], COMMIT)]:
        dg.StaticPartitionsDefinition([key])  # Dagster's own check of partition keys
        assert "..." not in key and validate_ref(key) == key and check_version_key(key) == key
        assert files.path(["flights", "gate_result"], key).name == f"{key}.json"
    assert check_version_key(COMMIT) == COMMIT  # an old home's key: the full commit id
    assert shown(COMMIT) == COMMIT[:12] and shown("2013-03.6870220f") == "2013-03.6870220f"  # as tables print them
    for bad in ("2013-03", "../x.6870220f", "2013-03.XYZ", "a b.6870220f", ""):
        with pytest.raises(ValueError, match="not a data-version key"):
            check_version_key(bad)


def test_keys_resolve_to_full_commit_ids_and_back(tmp_path: Path) -> None:
    cfg = parse_config(tiny_config())
    store, repo = LocalStore(tmp_path / "store"), raw_repo(cfg)
    store.create_repo(repo, default_branch=WATCHED_BRANCH)
    march = store.commit(repo, WATCHED_BRANCH, {"raw/flights/2013-03.parquet": b"m"}, "ingest",
                         metadata={"partition": "2013-03"})
    by_hand = store.commit(repo, WATCHED_BRANCH, {"raw/flights/2013-04.parquet": b"a",
                                                  "raw/weather/2013-04.parquet": b"w"}, "made outside mlassets")
    cleanup = store.commit(repo, WATCHED_BRANCH, {"notes.txt": b"n"}, "no partition at all")
    assert key_of(store, cfg, march.id) == f"2013-03.{march.id[:8]}"
    assert key_of(store, cfg, by_hand.id) == f"2013-04.{by_hand.id[:8]}"  # from its diff: no ingest metadata
    assert key_of(store, cfg, cleanup.id) == f"data.{cleanup.id[:8]}"
    for commit in (march, by_hand, cleanup):
        assert resolve_key(store, cfg, key_of(store, cfg, commit)) == commit.id
    assert resolve_key(store, cfg, march.id) == march.id  # an old home's key names itself
    assert set(version_map(store, cfg).values()) == {c.id for c in store.log(repo, WATCHED_BRANCH)}
    with pytest.raises(ValueError, match=r"'2013-05.0123abcd': no commit of .* has this key"):
        resolve_key(store, cfg, "2013-05.0123abcd")
    later = store.commit(repo, WATCHED_BRANCH, {"raw/flights/2013-05.parquet": b"n"}, "ingest",
                         metadata={"partition": "2013-05"})
    assert resolve_key(store, cfg, f"2013-05.{later.id[:8]}") == later.id  # a new head is read again


def test_the_cli_finds_a_version_by_key_partition_or_commit() -> None:
    a, b = "a" * 40, "b" * 40
    commits = {"2013-03.aaaaaaaa": a, "2013-04.bbbbbbbb": b, b: b}
    keys = list(commits)
    assert matching(keys, commits, "2013-03.aaaaaaaa") == ["2013-03.aaaaaaaa"]
    assert matching(keys, commits, "2013-03") == ["2013-03.aaaaaaaa"]
    assert matching(keys, commits, a) == ["2013-03.aaaaaaaa"]
    assert matching(keys, commits, "aaaaaaaa") == ["2013-03.aaaaaaaa"]
    assert matching(keys, commits, "bbbbbbbb") == ["2013-04.bbbbbbbb", b]  # ambiguous: the CLI says so
    assert matching(keys, commits, "2013") == []
