"""One scheduling tick on one machine: reap ended jobs, take leases whose heartbeats stopped, warn and stop overruns,
then start queued jobs where GPUs are free, preempting lower priority classes when the fleet is full. A GPU slot is
a claim in the lease table: a job holds ``gpus`` of one pool while it runs; its processes are one process group.

This is the least code the issue needs beyond Dagster's run queue, which orders runs and caps them per team tag but
cannot hold several slots of a pool for one run or stop a running run for an urgent one (README: Sharing a GPU fleet).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import Any

from mlassets.core.fleet import heartbeat as hb
from mlassets.core.fleet.config import FleetConfig
from mlassets.core.fleet.placement import free_gpus, open_pools, queue_order, team_gpus, victims, waiting_reason
from mlassets.core.fleet.policy import (
    LEASE_LOST,
    OVERRUN,
    PREEMPTED,
    REQUEUED,
    STOP,
    WARN,
    lease_lapsed,
    lost_steps,
    overrun,
)
from mlassets.core.fleet.table import FleetTable

PREEMPTED_EXIT = 76  # mlassets.core.train.outcome.PREEMPTED_EXIT (not imported: core.fleet imports no stage)


class Scheduler:
    """Holds the processes it started (one ``Popen`` per running job) and ticks every ``lease.heartbeat_s``."""

    def __init__(self, fleet: FleetConfig, table: FleetTable, env: dict[str, str] | None = None) -> None:
        self.fleet, self.table = fleet, table
        self.env = dict(os.environ if env is None else env)
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def tick(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        for job in self.table.jobs("running", "stopping"):
            self._watch(job, now)
        self._place(now)

    def _watch(self, job: dict[str, Any], now: float) -> None:
        proc = self.procs.get(job["id"])
        code = proc.poll() if proc is not None else -1
        if code is not None:
            self._ended(job, code, now)
            return
        beats = self.table.heartbeats(job["id"])
        lapsed = lease_lapsed(self.fleet.lease, beats, now, job["started"])
        if job["state"] == "running" and lapsed is not None:
            lost = lost_steps(beats) or 0
            self._kill(job)
            self._release(job, now, "queued", f"lease lost: no heartbeat for {lapsed:.0f} s (lease "
                          f"{self.fleet.lease.seconds:g} s); requeued to resume from its last checkpoint")
            self.table.event(job["id"], LEASE_LOST, f"no heartbeat for {lapsed:.0f} s", lost, now)
        elif job["state"] == "stopping" and now > job["stop_deadline"]:
            self._kill(job)  # past the grace period: what it had not saved is lost
        elif job["state"] == "running":
            self._overrun(job, now)

    def _overrun(self, job: dict[str, Any], now: float) -> None:
        ran_min = (now - job["started"]) / 60
        verdict = overrun(self.fleet, job["expected_minutes"], ran_min, bool(job["warned"]))
        if verdict == STOP:
            self._stop(job, now, OVERRUN, f"ran {ran_min:.1f} min, {self.fleet.overrun_factor:g}x its expected "
                                            f"{job['expected_minutes']:g} min")
        elif verdict == WARN:
            self.table.update(job["id"], warned=1)
            self.table.event(job["id"], "overrun-warning", f"past its expected {job['expected_minutes']:g} min",
                             0, now)

    def _ended(self, job: dict[str, Any], code: int, now: float) -> None:
        self.procs.pop(job["id"], None)
        beats = self.table.heartbeats(job["id"])
        saved = _preempted_at(job["out_dir"])  # written by ranks that checkpointed and exited as preempted
        if job["state"] == "stopping" or code == PREEMPTED_EXIT or saved is not None:
            lost = 0 if saved is not None else lost_steps(beats) or 0
            kind = job["stop_kind"] or PREEMPTED
            requeue = kind in REQUEUED
            self._release(job, now, "queued" if requeue else "stopped",
                          f"{kind}; " + ("requeued to resume from its checkpoint" if requeue else "stopped"))
            # torchrun ends 1 when its ranks end 76: the ranks' status is the one that says what happened
            self.table.event(job["id"], kind, f"exit {PREEMPTED_EXIT}; checkpoint at step {saved}" if saved is not None
                             else f"exit {code}; no checkpoint written in the grace period", lost, now)
        else:
            self._release(job, now, "done" if code == 0 else "failed", "" if code == 0 else f"exit status {code}")

    def _release(self, job: dict[str, Any], now: float, state: str, reason: str) -> None:
        """Give back its GPUs and account the GPU-seconds and money it used."""
        used = job["gpus"] * (now - (job["started"] or now))
        price = self.fleet.pools[job["pool"]].price_per_gpu_hour if job["pool"] in self.fleet.pools else 0.0
        self.table.clear_heartbeats(job["id"])
        self.table.update(job["id"], state=state, reason=reason, ended=now, pid=None, stop_kind="",
                          gpu_seconds=job["gpu_seconds"] + used, spent=job["spent"] + used / 3600 * price)

    def _kill(self, job: dict[str, Any]) -> None:
        proc = self.procs.get(job["id"])
        if proc is None or proc.poll() is not None:
            return
        for sig in (signal.SIGKILL, signal.SIGCONT):  # SIGCONT: a stopped process acts on the kill
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        proc.wait(30)

    def _stop(self, job: dict[str, Any], now: float, kind: str, reason: str) -> None:
        """SIGTERM: the job checkpoints within the grace period and exits; its GPUs free when it has."""
        self.table.update(job["id"], state="stopping", stop_kind=kind, reason=reason,
                          stop_deadline=now + self.fleet.grace_s)
        proc = self.procs.get(job["id"])
        if proc is not None:
            proc.send_signal(signal.SIGTERM)  # torchrun forwards it to every rank

    def _place(self, now: float) -> None:
        jobs = self.table.jobs()
        free = free_gpus(self.fleet, jobs)
        for job in queue_order(jobs):
            used, quota = team_gpus(jobs, job["team"]), self.fleet.teams[job["team"]].gpu_quota
            if used + job["gpus"] > quota:
                self.table.update(job["id"], reason=f"waits for team {job['team']}'s quota "
                                                    f"({used} of {quota} GPUs in use, needs {job['gpus']})")
                continue
            allowed = open_pools(self.fleet, job, jobs)
            if not allowed:
                self.table.update(job["id"], reason=f"waits for team {job['team']}'s limit of capacity "
                                                    f"{job['capacity']} (teams.{job['team']}.borrowing_limit)")
                continue
            pool = next((p for p in allowed if free[p] >= job["gpus"]), None)
            if pool is not None:
                self._start(job, pool, now)
                free[pool] -= job["gpus"]
                jobs = self.table.jobs()
                continue
            found = victims(self.fleet, job, jobs, free)
            if found is not None and found[1]:
                for victim in found[1]:
                    self._stop(victim, now, PREEMPTED, f"preempted by job {job['id']} ({job['priority']})")
                jobs = self.table.jobs()
                self.table.update(job["id"], reason=f"waits for {found[0]} GPUs being freed by "
                                  f"preempting job(s) {', '.join(str(v['id']) for v in found[1])}")
            elif found is not None:
                self.table.update(job["id"], reason="waits for preempted jobs to checkpoint")
            else:
                self.table.update(job["id"], reason=waiting_reason(self.fleet, job, free))

    def _start(self, job: dict[str, Any], pool: str, now: float) -> None:
        env = {**self.env, hb.DB_ENV: str(self.table.path), hb.JOB_ENV: str(job["id"]),
               hb.EVERY_ENV: str(self.fleet.lease.heartbeat_s), "MLASSETS_PREEMPTIBLE": "1"}
        if job["out_dir"]:
            (_preempted_path(job["out_dir"])).unlink(missing_ok=True)
        proc = subprocess.Popen(json.loads(job["command"]), env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs[job["id"]] = proc
        self.table.update(job["id"], state="running", pool=pool, started=now, pid=proc.pid, reason="", warned=0,
                          attempts=job["attempts"] + 1)

    def close(self) -> None:
        """Stop every process this scheduler started (tests, and the end of ``mlassets fleet serve``): every group
        is killed before any is waited for."""
        running = [proc for proc in self.procs.values() if proc.poll() is None]
        for proc in running:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
        for proc in running:
            proc.wait(30)
        self.procs.clear()


def _preempted_path(out_dir: str) -> Any:
    from pathlib import Path

    return Path(out_dir) / "preempted.json"


def _preempted_at(out_dir: str) -> int | None:
    path = _preempted_path(out_dir) if out_dir else None
    return json.loads(path.read_text())["preempted_at_step"] if path is not None and path.is_file() else None
