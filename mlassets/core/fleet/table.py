"""The lease table: jobs (queued, running, stopping, done, failed, refused), each rank's last heartbeat, and the
events (preemptions, lost leases, overruns) with the work each one lost. One sqlite file under the home."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mlassets.core.fleet.spec import JobSpec

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, team TEXT NOT NULL, priority TEXT NOT NULL,
  priority_value INTEGER NOT NULL, gpus INTEGER NOT NULL, capacity TEXT NOT NULL, preemptible INTEGER NOT NULL,
  expected_minutes REAL NOT NULL, checkpoint_minutes REAL NOT NULL, cost REAL NOT NULL, state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '', pool TEXT NOT NULL DEFAULT '', command TEXT NOT NULL DEFAULT '[]',
  out_dir TEXT NOT NULL DEFAULT '', submitted REAL NOT NULL, started REAL, ended REAL, gpu_seconds REAL NOT NULL
  DEFAULT 0, spent REAL NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, pid INTEGER, stop_kind TEXT NOT NULL
  DEFAULT '', stop_deadline REAL, warned INTEGER NOT NULL DEFAULT 0, who TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS heartbeats (
  job_id INTEGER NOT NULL, rank INTEGER NOT NULL, time REAL NOT NULL, step INTEGER NOT NULL DEFAULT 0,
  checkpoint_step INTEGER NOT NULL DEFAULT 0, pid INTEGER, PRIMARY KEY (job_id, rank));
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER NOT NULL, time REAL NOT NULL, kind TEXT NOT NULL,
  detail TEXT NOT NULL, lost_steps INTEGER NOT NULL DEFAULT 0);
"""
ACTIVE = ("running", "stopping")  # states that hold GPUs


class FleetTable:
    """Every read and write of the lease table (short transactions; WAL, so ranks and the CLI read while it ticks)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            if "pid" not in {r[1] for r in db.execute("PRAGMA table_info(heartbeats)")}:  # a table from before
                db.execute("ALTER TABLE heartbeats ADD COLUMN pid INTEGER")
            if "who" not in {r[1] for r in db.execute("PRAGMA table_info(jobs)")}:  # who submitted it
                db.execute("ALTER TABLE jobs ADD COLUMN who TEXT NOT NULL DEFAULT ''")
        finally:
            db.close()

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            db.execute("BEGIN IMMEDIATE")
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def submit(self, name: str, spec: JobSpec, priority_value: int, cost: float, state: str, reason: str = "",
               command: list[str] | None = None, out_dir: str = "", now: float | None = None) -> int:
        with self._db() as db:
            cur = db.execute(
                "INSERT INTO jobs (name, team, priority, priority_value, gpus, capacity, preemptible, expected_minutes,"
                " checkpoint_minutes, cost, state, reason, command, out_dir, submitted) VALUES "
                "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (name, spec.team, spec.priority, priority_value, spec.gpus, spec.capacity, int(spec.preemptible),
                 spec.expected_minutes, spec.checkpoint_every_minutes, cost, state, reason,
                 json.dumps(command or []), out_dir, time.time() if now is None else now))
            return int(cur.lastrowid or 0)

    def jobs(self, *states: str) -> list[dict[str, Any]]:
        where = f" WHERE state IN ({','.join('?' * len(states))})" if states else ""
        with self._db() as db:
            rows = db.execute(f"SELECT * FROM jobs{where} ORDER BY id", states).fetchall()
        return [dict(r) for r in rows]

    def job(self, job_id: int) -> dict[str, Any]:
        with self._db() as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise KeyError(f"fleet job {job_id}: no such job")
        return dict(row)

    def update(self, job_id: int, **values: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._db() as db:
            db.execute(f"UPDATE jobs SET {sets} WHERE id = ?", (*values.values(), job_id))

    def heartbeat(self, job_id: int | str, rank: int, step: int = 0, checkpoint_step: int = 0,
                  now: float | None = None, pid: int | None = None) -> None:
        """A rank renews its job's lease (and says how far it is and where its last checkpoint is). ``job_id`` is a
        fleet job's id, or the text key of a Dagster run's lease (``dagster:<run id>``; sqlite keeps it as text)."""
        with self._db() as db:
            db.execute("INSERT INTO heartbeats (job_id, rank, time, step, checkpoint_step, pid) VALUES (?,?,?,?,?,?) "
                       "ON CONFLICT (job_id, rank) DO UPDATE SET time = excluded.time, step = excluded.step, "
                       "checkpoint_step = excluded.checkpoint_step, pid = excluded.pid",
                       (job_id, rank, time.time() if now is None else now, step, checkpoint_step, pid))

    def heartbeats(self, job_id: int | str) -> list[dict[str, Any]]:
        with self._db() as db:
            rows = db.execute("SELECT * FROM heartbeats WHERE job_id = ? ORDER BY rank", (job_id,)).fetchall()
        return [dict(r) for r in rows]

    def forget(self, job_id: int | str, rank: int) -> None:
        with self._db() as db:
            db.execute("DELETE FROM heartbeats WHERE job_id = ? AND rank = ?", (job_id, rank))

    def clear_heartbeats(self, job_id: int | str) -> None:
        with self._db() as db:
            db.execute("DELETE FROM heartbeats WHERE job_id = ?", (job_id,))

    def event(self, job_id: int | str, kind: str, detail: str, lost_steps: int = 0, now: float | None = None) -> None:
        with self._db() as db:
            db.execute("INSERT INTO events (job_id, time, kind, detail, lost_steps) VALUES (?,?,?,?,?)",
                       (job_id, time.time() if now is None else now, kind, detail, lost_steps))

    def events(self) -> list[dict[str, Any]]:
        with self._db() as db:
            return [dict(r) for r in db.execute("SELECT * FROM events ORDER BY id").fetchall()]
