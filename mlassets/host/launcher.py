"""The embedded instance's run launcher: Dagster's ``DefaultRunLauncher`` (runs start in the code server) that
launches a run once, and a run key once, whatever the daemons did.

Two daemons on one home (an orphan of a killed one beside its restart) could both dequeue the same queued run,
or both let a sensor tick create a run for the same run key. Before launching, the launcher claims the run id,
and (for a run a sensor or schedule requested, not a retry of one) its run key, in one sqlite table with unique
keys beside the instance (``$DAGSTER_HOME/mlassets-launches.db``): the loser launches nothing, and a second run
for a claimed run key is cancelled, naming the run that holds it. A run carrying a job spec that the fleet's
admission refuses (however it was submitted: the UI, a retry) is cancelled with the refusal's sentence. Each
launched run is tagged with the token of the daemon tree that launched it (``mlassets/daemon``), which the run
monitor uses to tell a dead worker.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path

from dagster import DefaultRunLauncher
from dagster._core.launcher import LaunchRunContext
from dagster._core.storage.tags import PARENT_RUN_ID_TAG, RUN_KEY_TAG, SCHEDULE_NAME_TAG, SENSOR_NAME_TAG

DAEMON_TAG = "mlassets/daemon"  # the token of the daemon tree that launched the run
HOST_TAG = "mlassets/host"  # the machine a run's process runs on (a pid means something there only)
TOKEN_ENV = "MLASSETS_DAEMON_TOKEN"  # (daemon_tree.TOKEN_ENV; not imported: this module loads with every instance)
_SCHEMA = ("CREATE TABLE IF NOT EXISTS launched (run_id TEXT PRIMARY KEY, at REAL NOT NULL)",
           "CREATE TABLE IF NOT EXISTS run_keys (origin TEXT NOT NULL, run_key TEXT NOT NULL, run_id TEXT NOT NULL, "
           "PRIMARY KEY (origin, run_key))")


class Claims:
    """Unique claims on run ids and run keys, shared by every process of the home (sqlite, WAL)."""

    def __init__(self, root: str | Path) -> None:
        self.path = Path(root) / "mlassets-launches.db"

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        for statement in _SCHEMA:
            conn.execute(statement)
        return conn

    def run(self, run_id: str) -> bool:
        """True for the first claim of ``run_id``; False when it was launched before."""
        import time

        with self._connect() as conn:
            return conn.execute("INSERT OR IGNORE INTO launched VALUES (?, ?)", (run_id, time.time())).rowcount == 1

    def run_key(self, origin: str, run_key: str, run_id: str) -> str:
        """The run that holds ``run_key`` of ``origin``: ``run_id`` when it is the first to claim it."""
        with self._connect() as conn:
            conn.execute("INSERT OR IGNORE INTO run_keys VALUES (?, ?, ?)", (origin, run_key, run_id))
            return conn.execute("SELECT run_id FROM run_keys WHERE origin = ? AND run_key = ?",
                                (origin, run_key)).fetchone()[0]


class OnceRunLauncher(DefaultRunLauncher):
    """``DefaultRunLauncher`` that never launches a run twice, nor two runs for one run key (see the module)."""

    def launch_run(self, context: LaunchRunContext) -> None:
        run, instance = context.dagster_run, self._instance
        claims = Claims(instance.root_directory)
        if not claims.run(run.run_id):
            instance.report_engine_event("mlassets: this run was launched before (another daemon dequeued it too); "
                                         "not launched again", run)
            return
        origin = run.tags.get(SENSOR_NAME_TAG) or run.tags.get(SCHEDULE_NAME_TAG)
        key = run.tags.get(RUN_KEY_TAG)
        if origin and key and not run.tags.get(PARENT_RUN_ID_TAG):  # a retry shares its parent's run key
            holder = claims.run_key(origin, key, run.run_id)
            if holder != run.run_id:
                instance.report_run_canceled(run, f"mlassets: run key {key!r} of {origin} already has run {holder}; "
                                                  "a run key is launched once (not launched)")
                return
        from mlassets.defs.fleet.admission import REFUSED_TAG, launch_refusal

        refusal = launch_refusal(instance, run)  # every training run passes admission, however it was started
        if refusal:
            instance.add_run_tags(run.run_id, {REFUSED_TAG: refusal})
            instance.report_run_canceled(run, f"mlassets: {refusal}; not launched")
            return
        instance.add_run_tags(run.run_id, {DAEMON_TAG: os.environ.get(TOKEN_ENV, ""), HOST_TAG: socket.gethostname()})
        super().launch_run(context)
