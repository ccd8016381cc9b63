"""A training rank renews its job's lease: a daemon thread writes a heartbeat (with the step reached and the step
of the last checkpoint) every ``heartbeat_s``. A frozen rank (SIGSTOP, a hung kernel) stops beating, and the
scheduler takes its lease away. Started only when the fleet launched the process (``MLASSETS_FLEET_JOB``)."""

from __future__ import annotations

import atexit
import os
import threading

from mlassets.core.fleet.table import FleetTable

DB_ENV, JOB_ENV, EVERY_ENV = "MLASSETS_FLEET_DB", "MLASSETS_FLEET_JOB", "MLASSETS_FLEET_HEARTBEAT_S"
_progress = {"step": 0, "checkpoint_step": 0}


def note(step: int | None = None, checkpoint_step: int | None = None) -> None:
    """The training loop says how far it is (cheap: two integers; the thread sends them)."""
    if step is not None:
        _progress["step"] = step
    if checkpoint_step is not None:
        _progress["checkpoint_step"] = checkpoint_step


class Heartbeat:
    def __init__(self, table: FleetTable, job_id: int, rank: int, every_s: float) -> None:
        self.table, self.job_id, self.rank, self.every_s = table, job_id, rank, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fleet-heartbeat", daemon=True)

    def beat(self) -> None:
        self.table.heartbeat(self.job_id, self.rank, _progress["step"], _progress["checkpoint_step"])

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.beat()

    def start(self) -> Heartbeat:
        self.beat()
        self._thread.start()
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """This rank ended (its process exits): it no longer holds the lease up, nor lets it lapse. A killed rank
        never gets here, and its last heartbeat ages until the lease is lost."""
        self._stop.set()
        self.table.forget(self.job_id, self.rank)


def start_from_env() -> Heartbeat | None:
    """Beat for the fleet job this process belongs to, if the fleet started it."""
    job = os.environ.get(JOB_ENV)
    if not job:
        return None
    rank = int(os.environ.get("RANK", "0"))
    return Heartbeat(FleetTable(os.environ[DB_ENV]), int(job), rank, float(os.environ.get(EVERY_ENV, "30"))).start()
