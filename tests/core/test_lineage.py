"""Where the code came from, in a checkout and in an image without its .git."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlassets.core import lineage


@pytest.fixture
def no_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lineage, "PROJECT_ROOT", tmp_path)  # as in the image: the code, no .git
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # git must not find an enclosing checkout
    lineage.git_sha.cache_clear()
    yield
    lineage.git_sha.cache_clear()


def test_a_checkout_reports_its_commit() -> None:
    lineage.git_sha.cache_clear()
    sha = lineage.git_sha()
    assert len(sha) == 40 and int(sha, 16) >= 0


def test_an_image_reports_the_commit_it_was_built_from(no_checkout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lineage.GIT_SHA_ENV, "0123456789abcdef0123456789abcdef01234567")
    assert lineage.git_sha() == "0123456789abcdef0123456789abcdef01234567"
    assert lineage.git_dirty() is False


def test_without_a_checkout_or_a_build_sha_the_code_is_unknown_and_not_clean(no_checkout, monkeypatch) -> None:
    monkeypatch.delenv(lineage.GIT_SHA_ENV, raising=False)
    assert lineage.git_sha() == "unknown"
    assert lineage.git_dirty() is True
