"""A training rank renews its job's lease: a daemon thread writes a heartbeat (with the step reached and the step
of the last checkpoint) every ``heartbeat_s``. A frozen rank (SIGSTOP, a hung kernel) stops beating, and the
scheduler takes its lease away. Started only when the fleet launched the process (``MLASSETS_FLEET_JOB``): a job of
``mlassets fleet serve`` (its id) or the training step of a Dagster run (``dagster:<run id>``, whose lease the
fleet sensor watches, ``mlassets.defs.fleet.leases``); when a lease has lapsed is
``mlassets.core.fleet.policy.lease_lapsed``."""

from __future__ import annotations

import atexit
import os
import signal
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
    def __init__(self, table: FleetTable, job_id: int | str, rank: int, every_s: float) -> None:
        self.table, self.job_id, self.rank, self.every_s = table, job_id, rank, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fleet-heartbeat", daemon=True)

    def beat(self) -> None:
        self.table.heartbeat(self.job_id, self.rank, _progress["step"], _progress["checkpoint_step"], pid=os.getpid())

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
    key: int | str = int(job) if job.isdigit() else job
    return Heartbeat(FleetTable(os.environ[DB_ENV]), key, rank, float(os.environ.get(EVERY_ENV, "30"))).start()


def run_lease(run_id: str) -> str:
    """The lease key of a Dagster run's training ranks."""
    return f"dagster:{run_id}"


def kill_ranks(table: FleetTable, key: int | str) -> list[int]:
    """SIGKILL (then SIGCONT, so that a stopped process acts on it) every rank that beats for ``key``; its rows go.
    For ranks past the grace period: a SIGSTOPped or hung rank never acts on SIGTERM or SIGINT."""
    killed = []
    for beat in table.heartbeats(key):
        if beat["pid"] and beat["pid"] != os.getpid():
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(beat["pid"], sig)
                except ProcessLookupError:
                    break
            killed.append(beat["pid"])
    table.clear_heartbeats(key)
    return killed
