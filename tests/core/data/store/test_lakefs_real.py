"""Opt-in: the whole store contract (contract, transactions, writer processes) against a real lakeFS server.

Runs when the lakeFS SDK's variables point at a server: ``LAKECTL_SERVER_ENDPOINT_URL``,
``LAKECTL_CREDENTIALS_ACCESS_KEY_ID``, ``LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY`` (and, for a blockstore other
than lakeFS's local one, ``MLASSETS_LAKEFS_NAMESPACE``, e.g. ``s3://bucket/prefix/{repo}``). Every test
repository is named ``mlassets-test-*`` and deleted afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from mlassets.core.data.store.lakefs import LakeFSStore
from mlassets.core.data.store.lakefs_api import ACCESS_KEY_ENV, ENDPOINT_ENV, SECRET_KEY_ENV

if not all(os.environ.get(v) for v in (ENDPOINT_ENV, ACCESS_KEY_ENV, SECRET_KEY_ENV)):
    pytest.skip(f"no real lakeFS configured: set {ENDPOINT_ENV}, {ACCESS_KEY_ENV} and {SECRET_KEY_ENV} to run the"
                " store contract suite against one (the spec-validated fake runs it in every test run)",
                allow_module_level=True)

# The same tests, collected again here with this module's `store` fixture (a real-server LakeFSStore).
from tests.core.data.store.test_concurrency import *  # noqa: E402, F403
from tests.core.data.store.test_contract import *  # noqa: E402, F403
from tests.core.data.store.test_contract_refs import *  # noqa: E402, F403
from tests.core.data.store.test_transactions import *  # noqa: E402, F403


@pytest.fixture
def store() -> LakeFSStore:
    return LakeFSStore()


@pytest.fixture
def repo_name(store: LakeFSStore) -> Iterator[str]:
    name = f"mlassets-test-{uuid.uuid4().hex[:12]}"
    yield name
    for created in store.list_repos():
        if created.startswith(name):
            store.delete_repo(created)
