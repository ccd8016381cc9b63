"""Fixtures of the ``VersionedStore`` contract suite: every backend in ``BACKENDS`` runs every test."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mlassets.core.data.store import VersionedStore
from mlassets.core.data.store.local import LocalStore
from tests.core.data.store import fake_lakefs

# Backend name -> factory(tmp_path). Adding a backend to the contract suite is one line here.
BACKENDS: dict[str, Callable[[Path], VersionedStore]] = {
    "local": lambda tmp_path: LocalStore(tmp_path / "store"),
    "lakefs": lambda tmp_path: fake_lakefs.shared().store(),  # the spec-validated fake lakeFS server
}


@pytest.fixture(autouse=True)
def _fake_lakefs_stays_in_spec() -> Iterator[None]:
    """Fail the test during which the fake lakeFS rejected a request or refused a response (see fake_lakefs)."""
    yield
    server = fake_lakefs.running()
    problems = server.take_problems() if server else []
    assert not problems, "the lakeFS API spec was not followed:\n" + "\n".join(problems)


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> VersionedStore:
    """A fresh store of each backend."""
    return BACKENDS[request.param](tmp_path)


@pytest.fixture
def repo_name() -> str:
    """A fresh, unique repository name (not created)."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def repo(store: VersionedStore, repo_name: str) -> str:
    """A fresh, created repository (default branch ``main``)."""
    store.create_repo(repo_name)
    return repo_name
