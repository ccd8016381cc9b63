"""Readable names of data versions: the partitions a version added and a short id; the full id stays the key."""

from __future__ import annotations

import pytest

from mlassets.core.naming import run_name, short_id, version_label

COMMIT = "6870220f874e" + "0" * 52


def test_a_version_is_named_by_the_partition_it_added_and_a_short_id() -> None:
    assert version_label(["2013-03"], COMMIT) == "2013-03 · 6870220f"
    assert short_id(COMMIT) == "6870220f" and len(COMMIT) == 64


@pytest.mark.parametrize(("partitions", "expected"), [
    ([], "6870220f"),  # an unknown ingest: the short id alone
    ([""], "6870220f"),
    (["2013-01", "2013-02"], "2013-01, 2013-02 · 6870220f"),
    (["a", "b", "c", "d", "e"], "a, b, c +2 more · 6870220f"),
])
def test_names_of_versions_that_added_none_or_several_partitions(partitions: list[str], expected: str) -> None:
    assert version_label(partitions, COMMIT) == expected


def test_two_versions_of_one_partition_have_different_names() -> None:
    other = "1c2d3e4f" + "0" * 56
    assert version_label(["2013-03"], COMMIT) != version_label(["2013-03"], other)


def test_an_mlflow_run_is_named_by_dataset_and_version() -> None:
    assert run_name("flights", version_label(["2013-03"], COMMIT)) == "flights · 2013-03 · 6870220f"
