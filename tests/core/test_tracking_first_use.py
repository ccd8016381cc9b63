"""Processes that open a new embedded tracking store at once all succeed: the first one creates and migrates the
sqlite tables while the others wait (without the lock they fail on each other's tables and columns)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from mlassets.core import tracking

pytestmark = pytest.mark.e2e  # slow (processes, kills, memory): in `make test`, not `make test-fast`

CODE = "from mlassets.core import tracking; print(tracking.configure())"


def test_four_processes_open_a_new_tracking_store_at_once(home: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", CODE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    assert [code for code, _, _ in results] == [0, 0, 0, 0], [err[-1500:] for code, _, err in results if code]
    assert len({out.strip() for _, out, _ in results}) == 1  # one experiment, the same id for all
    tracking.configure()
    assert [e.name for e in mlflow.search_experiments()].count(tracking.EXPERIMENT) == 1


KILLED = """
import sys, time
from pathlib import Path
import sqlalchemy
import mlflow.store.db.utils as db_utils
from mlassets.core import tracking

def stalled_upgrade(engine):  # MLflow's migration, stopped half-way: its temporary table made, nothing renamed
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("CREATE TABLE _alembic_tmp_metrics (key VARCHAR(250))"))
    Path(sys.argv[1]).touch()
    time.sleep(600)

db_utils._upgrade_db = stalled_upgrade
tracking.configure()
"""


def test_a_creation_killed_mid_migration_leaves_no_database_and_the_next_open_works(home: str, tmp_path) -> None:
    """A daemon killed while a run created the embedded store left a half-migrated database that every later
    run failed to open (``table _alembic_tmp_metrics already exists``)."""
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    ready = tmp_path / "migrating"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(ready)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ready.exists(), proc.stderr.read()[-2000:] if proc.poll() is not None else "never reached the migration"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    db = Path(tracking.paths.mlflow_tracking_uri().removeprefix("sqlite:///"))
    assert not db.exists()  # only the temporary file was half-made

    done = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    tracking.configure()
    with mlflow.start_run():
        mlflow.log_metric("m", 1.0)
    assert [e.name for e in mlflow.search_experiments()].count(tracking.EXPERIMENT) == 1
