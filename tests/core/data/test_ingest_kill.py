"""An ingest SIGKILLed in the middle of its transaction: main is intact, ``prune-transactions`` leaves nothing.

The writer runs in a spawned process and is killed while it validates its staged commit (its objects are
written, nothing has landed). On lakeFS it leaves its hidden branch, which pruning removes; the local store
leaves the staged commit no branch reaches (as every transaction does), which pruning removes. Either way the
next ingest lands normally.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pytest

from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.raw import WATCHED_BRANCH, partition_tables, raw_repo
from mlassets.core.data.store import VersionedStore
from mlassets.core.data.store.lakefs import LakeFSStore
from mlassets.core.data.store.lakefs_tx import TX_PREFIX
from mlassets.core.data.store.local import LocalStore
from tests.conftest import small_flights
from tests.core.data.store import fake_lakefs
from tests.core.data.store.conftest import _fake_lakefs_stays_in_spec  # noqa: F401 - the spec check, here too

pytestmark = pytest.mark.e2e  # slow (processes, kills, memory): in `make test`, not `make test-fast`

JAN, FEB = "2013-01", "2013-02"


def _open(spec: tuple[str, ...]) -> VersionedStore:
    kind, *args = spec
    if kind == "local":
        return LocalStore(args[0])
    return LakeFSStore(endpoint=args[0], access_key_id=args[1], secret_access_key=args[2])


def _writer(spec: tuple[str, ...], ready: str) -> None:
    """Ingest FEB, stopping forever once the transaction's commit is staged (the parent kills us there)."""
    import mlassets.core.data.ingest as ingest

    def stall(*args: object, **kwargs: object) -> None:
        Path(ready).touch()
        time.sleep(600)

    ingest.check_version = stall
    cfg = small_flights()
    ingest_partition(_open(spec), cfg, FEB, partition_tables(cfg, FEB))


def _hidden_branches(store: VersionedStore, repo: str) -> list[str]:
    if not isinstance(store, LakeFSStore):
        return []
    listing = store.api.branches_api.list_branches(repo, prefix=TX_PREFIX, show_hidden=True)
    return [b.id for b in listing.results]


@pytest.fixture(params=["local", "lakefs"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, ...]:
    if request.param == "local":
        return ("local", str(tmp_path / "store"))
    server = fake_lakefs.shared()
    return ("lakefs", server.url + fake_lakefs.BASE, *server.credentials)


def test_sigkill_mid_ingest_then_prune_leaves_nothing_and_main_intact(spec: tuple[str, ...], tmp_path: Path) -> None:
    cfg = small_flights()
    store = _open(spec)
    repo = raw_repo(cfg)
    if repo in store.list_repos():  # the shared fake lakeFS keeps repositories between tests
        store.delete_repo(repo)
    head = ingest_partition(store, cfg, JAN, partition_tables(cfg, JAN)).data_version
    ready = tmp_path / "staged"
    writer = mp.get_context("spawn").Process(target=_writer, args=(spec, str(ready)))
    writer.start()
    deadline = time.monotonic() + 120
    while not ready.exists() and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), f"the writer never staged its commit (exit code {writer.exitcode})"
    os.kill(writer.pid, signal.SIGKILL)
    writer.join(timeout=30)
    assert writer.exitcode == -signal.SIGKILL

    assert store.resolve(repo, WATCHED_BRANCH) == head  # nothing landed
    assert list(store.list_branches(repo)) == [WATCHED_BRANCH]
    left = _hidden_branches(store, repo)
    assert len(left) == (1 if spec[0] == "lakefs" else 0)  # lakeFS keeps the killed writer's hidden branch
    pruned = sorted(store.prune_transactions(repo, older_than_s=0))
    if spec[0] == "lakefs":
        assert pruned == left
    else:  # staged commits no branch reaches: the killed writer's, and the one JAN's transaction staged
        assert all("no branch reaches it" in line for line in pruned)
        assert sorted(line.rsplit(": ", 1)[1] for line in pruned) == [
            "'Ingest flights 2013-01')", "'Ingest flights 2013-02')"]
    assert store.prune_transactions(repo, older_than_s=0) == []
    assert _hidden_branches(store, repo) == []
    assert store.resolve(repo, WATCHED_BRANCH) == head
    again = ingest_partition(store, cfg, FEB, partition_tables(cfg, FEB))
    assert again.created and again.parent == head
    store.delete_repo(repo)  # the fake lakeFS server is shared by the whole test run
