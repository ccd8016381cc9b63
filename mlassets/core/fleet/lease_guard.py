"""The lease inside a pod: run a training command (torchrun) whose ranks renew a lease in the pod's own lease table,
and take the lease away as ``mlassets fleet serve`` does on one machine. When the oldest rank has not renewed it for
the lease's length (``--startup-seconds`` until some rank reached a step), every process of the command is SIGKILLed
(then SIGCONT, so that a stopped one acts on it) and the guard exits ``LEASE_LOST_EXIT``: the pod fails, and the job
restarts from its last checkpoint (the operator restarts the pod, or Kueue evicts and requeues the workload whose pod
stays not ready). SIGTERM and SIGINT are passed to the command (its ranks checkpoint and exit as preempted, 76);
otherwise the guard exits with the command's status.

    mlassets fleet lease-guard --lease-seconds 1800 --startup-seconds 300 --heartbeat-seconds 30 \\
        --lease-db /var/run/mlassets/lease.db --job flights-train -- torchrun --nproc-per-node=8 ...
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from mlassets.core.fleet import heartbeat as hb
from mlassets.core.fleet.config import Lease
from mlassets.core.fleet.policy import lease_lapsed
from mlassets.core.fleet.table import FleetTable

LEASE_LOST_EXIT = 75  # EX_TEMPFAIL: the pod's ranks lost their lease; a new attempt resumes from the checkpoint


def guard(command: list[str], lease: Lease, db: str, job: str) -> int:
    """Run ``command`` under the lease; return its exit status, or ``LEASE_LOST_EXIT`` once the lease lapsed."""
    table = FleetTable(db)
    table.clear_heartbeats(job)  # a restarted container: the last attempt's heartbeats are not this one's
    env = {**os.environ, hb.DB_ENV: db, hb.JOB_ENV: job, hb.EVERY_ENV: f"{lease.heartbeat_s:g}"}
    child = subprocess.Popen(command, env=env, start_new_session=True)

    def forward(signum: int, frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            try:
                code = child.wait(timeout=lease.heartbeat_s)
                return code if code >= 0 else 128 - code
            except subprocess.TimeoutExpired:
                pass
            lapsed = lease_lapsed(lease, table.heartbeats(job), time.time())
            if lapsed is not None:
                _kill_group(child)
                print(f"lease lost: no heartbeat for {lapsed:.0f} s (lease {lease.seconds:g} s); the ranks are "
                      f"killed and the job resumes from its last checkpoint (exit {LEASE_LOST_EXIT})",
                      file=sys.stderr, flush=True)
                return LEASE_LOST_EXIT
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if child.poll() is None:
            _kill_group(child)


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGKILL, signal.SIGCONT):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            break
    child.wait()

