"""``mlassets prune-transactions``: removes the hidden branch a killed lakeFS writer left, and nothing younger; on the
local store, the staged commits and objects of killed ingests, whose runs it marks failed (issue 22, case 6)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import lakefs_sdk
import pytest

from mlassets.cli import main
from mlassets.core.data.store import open_store
from mlassets.core.data.store.lakefs_tx import TX_PREFIX
from mlassets.examples.sales import write_example
from mlassets.host.instance import get_instance
from mlassets.host.run_liveness import PID_TAG
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


_STALLED_INGEST = """
import sys, time
from pathlib import Path
import mlassets.core.data.ingest as ingest
def stall(*args, **kwargs):
    Path(sys.argv[1]).touch()
    time.sleep(600)
ingest.check_version = stall  # held after its transaction staged, as a kill would find it
from mlassets.cli import main
main(["ingest", "--config", sys.argv[2], "--partition", sys.argv[3]])
"""


def _killed_ingest(config: Path, partition: str, tmp_path: Path) -> None:
    """``mlassets ingest`` in its own process, SIGKILLed after its transaction staged (its run STARTED)."""
    ready = tmp_path / f"staged-{partition}"
    proc = subprocess.Popen([sys.executable, "-c", _STALLED_INGEST, str(ready), str(config), partition])
    deadline = time.monotonic() + 180
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, f"the ingest of {partition} never staged"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_prune_removes_what_killed_ingests_left_and_fails_their_runs(home: str, tmp_path: Path, capsys) -> None:
    config = write_example(tmp_path / "sales", months=3)
    assert main(["ingest", "--config", str(config), "--partition", "2024-01"]) == 0
    store, repo = open_store(), "sales"
    head = store.resolve(repo, "main")
    _killed_ingest(config, "2024-02", tmp_path)
    instance = get_instance()
    (run,) = instance.get_runs(dg.RunsFilter(job_name="sales_ingest", statuses=[dg.DagsterRunStatus.STARTED]))
    objects = sum(1 for p in Path(home, "store", "objects").rglob("*") if p.is_file())
    capsys.readouterr()
    assert main(["prune-transactions", "--older-than", "0"]) == 0  # it reported success and removed nothing
    out = capsys.readouterr().out
    assert re.search(rf"{repo}: removed commit \w{{12}} \(\d+ s old, no branch reaches it: 'Ingest sales 2024-02'\)",
                     out), out  # the killed ingest's staged commit (and the landed one's, no longer needed)
    assert re.search(r"removed [1-9]\d* stored objects no commit refers to", out), out
    assert f"marked run {run.run_id} (sales_ingest 2024-02) failed: " in out
    assert f"(pid {run.tags[PID_TAG]}) is gone" in out  # the monitor's hidden tag
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
    assert sum(1 for p in Path(home, "store", "objects").rglob("*") if p.is_file()) < objects
    assert store.resolve(repo, "main") == head and store.list_objects(repo, "main")  # main untouched, readable
    assert main(["ingest", "--config", str(config), "--partition", "2024-02"]) == 0  # ingests work on
    capsys.readouterr()
    assert main(["prune-transactions", "--older-than", "3600"]) == 0
    assert "removed commit" not in capsys.readouterr().out  # younger than the age: kept
