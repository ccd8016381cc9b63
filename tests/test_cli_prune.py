"""``mlassets prune-transactions``: removes the hidden branch a killed lakeFS writer left, and nothing younger."""

from __future__ import annotations

import time

import lakefs_sdk
import pytest

from mlassets.cli import main
from mlassets.core.data.store._lakefs_tx import TX_PREFIX
from tests.core.data.store import fake_lakefs
from tests.core.data.store.conftest import _fake_lakefs_stays_in_spec  # noqa: F401 - the spec check, here too


def _hidden(store, repo: str) -> list[str]:
    return [r.id for r in store.api.branches_api.list_branches(repo, prefix=TX_PREFIX, show_hidden=True).results]


def test_prune_removes_stale_transaction_branches_only(monkeypatch, capsys) -> None:
    server = fake_lakefs.shared()
    monkeypatch.setenv("LAKECTL_SERVER_ENDPOINT_URL", server.url + fake_lakefs.BASE)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", server.credentials[0])
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", server.credentials[1])
    store, repo = server.store(), f"prune-{int(time.time() * 1000)}"
    store.create_repo(repo)
    head = store.resolve(repo, "main")
    stale, young = f"{TX_PREFIX}{int(time.time()) - 7200}-dead", f"{TX_PREFIX}{int(time.time())}-alive"
    for name in (stale, young):  # as a writer creates them; the first one's writer died two hours ago
        creation = lakefs_sdk.BranchCreation(name=name, source=head, hidden=True)
        store.api.branches_api.create_branch(repo, creation)
    assert main(["prune-transactions", "--backend", "lakefs", "--repo", repo]) == 0
    out = capsys.readouterr().out
    assert f"{repo}: removed {stale}" in out and young not in out
    assert _hidden(store, repo) == [young] and store.resolve(repo, "main") == head
    assert main(["prune-transactions", "--backend", "lakefs", "--repo", repo, "--older-than", "0"]) == 0
    assert _hidden(store, repo) == []


def test_prune_on_the_local_store_and_bad_input(home: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prune-transactions"]) == 0
    assert "pruned transactions older than 3600 s in 0 repositories (local)" in capsys.readouterr().out
    assert main(["prune-transactions", "--older-than", "-5"]) == 2
    assert "--older-than: -5.0 is negative" in capsys.readouterr().err
