"""Is the process executing a run still there? Evidence the instance holds, checked against ``/proc``.

- A run the daemon launched: its worker logs ``Started process for run (pid: N)`` (an engine event with the pid);
  the worker is alive while that pid runs a process that started before the event (a reused pid started later).
- A run the command line executes in its own process (``mlassets ingest | run | demo``): tagged with that
  process's pid, start time and host (``process_tags``).
- A run launched by a daemon tree (tag ``mlassets/daemon``: its token) whose worker never logged a pid: dead when
  no process of that tree is left, or when it has not started within the start timeout.

Runs of another host, and runs neither launched by ``mlassets.host.launcher`` nor executed by the command line (e.g. a
Kubernetes run launcher's), are never judged.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from mlassets.host.daemon_tree import tree_processes
from mlassets.host.launcher import DAEMON_TAG, HOST_TAG, OnceRunLauncher

# Under Dagster's hidden prefix (``dagster._core.storage.tags.HIDDEN_TAG_PREFIX``, ".dagster/"): kept on the run for
# the monitor, left out of the run list and the run page's tags. Runs from before carry the plain names (``LEGACY``).
PID_TAG, STARTED_TAG = ".dagster/mlassets/pid", ".dagster/mlassets/pid_started"
LEGACY_PID_TAG, LEGACY_STARTED_TAG = "mlassets/pid", "mlassets/pid_started"
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


@dataclass(frozen=True)
class Dead:
    run: dg.DagsterRun
    reason: str  # a sentence: what is gone


def _boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (unix seconds), or None when there is no such (live) process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):  # a zombie is dead, whatever waits for it
        return None
    return _boot_time() + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def process_tags() -> dict[str, str]:
    """Tags for a run this process executes itself: how to tell later whether it is still running."""
    pid = os.getpid()
    return {PID_TAG: str(pid), STARTED_TAG: f"{process_started(pid) or 0:.2f}", HOST_TAG: socket.gethostname()}


def tagged_pid(tags: dict[str, str]) -> tuple[int, float] | None:
    """The pid and process start time a command tagged its own run with (either tag names), or None."""
    for pid_tag, started_tag in ((PID_TAG, STARTED_TAG), (LEGACY_PID_TAG, LEGACY_STARTED_TAG)):
        if tags.get(pid_tag, "").isdigit():
            try:
                return int(tags[pid_tag]), float(tags.get(started_tag) or 0)
            except ValueError:
                return int(tags[pid_tag]), 0.0
    return None


def _worker_pid(instance: dg.DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """The newest pid a worker of the run logged, with the time it logged it."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, ascending=False).records
    for record in records:
        data = record.event_log_entry.dagster_event.engine_event_data
        pid = data.metadata.get("pid") if data and data.metadata else None
        if pid is not None and str(pid.value).isdigit():
            return int(pid.value), record.event_log_entry.timestamp
    return None


def dead_reason(instance: dg.DagsterInstance, run: dg.DagsterRun, home: str, start_timeout_s: float,
                current_token: str = "") -> str | None:
    """Why the run's process is gone (a sentence), or None while it runs or cannot be judged here."""
    tags = run.tags
    if DAEMON_TAG not in tags and PID_TAG not in tags and LEGACY_PID_TAG not in tags:  # not (yet) tagged
        return _never_started(instance, run, start_timeout_s) if isinstance(instance.run_launcher, OnceRunLauncher) \
            else None  # launched by something else (e.g. a Kubernetes run launcher): not judged here
    if tags.get(HOST_TAG) != socket.gethostname():
        return None  # another machine's
    logged = _worker_pid(instance, run.run_id)
    if logged is not None:
        pid, at = logged
        started = process_started(pid)
        if started is not None and started <= at + 2:
            return None
        return f"its run worker (pid {pid}) is gone"
    if (tagged := tagged_pid(tags)) is not None:
        pid, recorded = tagged
        started = process_started(pid)
        if started is not None and abs(started - recorded) < 2:
            return None
        return f"the command that ran it (pid {pid}) is gone"
    token = tags.get(DAEMON_TAG, "")
    if token and token != current_token and not tree_processes(home, token):
        return "the daemon that launched it is gone, and its worker never started"
    return _never_started(instance, run, start_timeout_s)


def _never_started(instance: dg.DagsterInstance, run: dg.DagsterRun, start_timeout_s: float) -> str | None:
    launched = instance.get_run_stats(run.run_id).launch_time
    if launched is not None and time.time() - launched > start_timeout_s:
        return f"its run worker did not start within {start_timeout_s:.0f} s"
    return None


def dead_runs(instance: dg.DagsterInstance, home: str, start_timeout_s: float, current_token: str = "",
              jobs: list[str] | None = None) -> list[Dead]:
    """Runs STARTING or STARTED whose process is gone (of ``jobs`` only, when given)."""
    runs = instance.get_runs(dg.RunsFilter(statuses=IN_PROGRESS, job_name=None))
    return [Dead(r, reason) for r in runs if (jobs is None or r.job_name in jobs)
            and (reason := dead_reason(instance, r, home, start_timeout_s, current_token))]
