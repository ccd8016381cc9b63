"""The process tree of ``mlassets daemon`` / ``mlassets ui``: one supervisor, its children in its process group,
ended with it whatever ends it.

Every process of a tree carries ``MLASSETS_DAEMON_TOKEN`` (a new one per start) in its environment, and so does
everything they start (code server, run workers, torchrun, training ranks): that is how the tree is found. The
children hold the home lock (``daemon_lock``) and get ``PR_SET_PDEATHSIG``: when the supervisor dies, even by
SIGKILL, the kernel signals them. One child, the reaper (``mlassets.host.reaper``), then kills every process of the
tree (SIGKILL, until none is left: a daemon given time to shut down could still dequeue and launch a run) before
it exits and the lock is released. A new supervisor also ends whatever an
earlier tree of the same home left (``end_leftovers``), so nothing of a killed daemon runs beside the next one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import IO

from mlassets.host.daemon_lock import HomeLock

TOKEN_ENV = "MLASSETS_DAEMON_TOKEN"
HOME_ENV = "MLASSETS_DAEMON_HOME"  # the Dagster home the tree serves (leftovers are found by it)
_PR_SET_PDEATHSIG = 1


def ready_file(dagster_home: str) -> Path:
    """The run monitor writes the tree's token here once the retries of runs an earlier tree left are queued: only
    then does the supervisor start the Dagster daemon (whose queue would otherwise run later runs first)."""
    return Path(dagster_home) / ".run-monitor-ready"


def _pdeathsig(sig: int, parent: int) -> None:
    """In the child, before exec: be sent ``sig`` when the parent dies; default signal handlers."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background job of a shell inherits them ignored
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs
            if k in (TOKEN_ENV.encode(), HOME_ENV.encode())}


def tree_processes(home: str, token: str | None = None, exclude: tuple[int, ...] = ()) -> list[int]:
    """Pids of live processes of a daemon tree of ``home`` (of the one with ``token``, or of any token but the
    excluded pids)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        env = _environ(int(entry.name))
        if env.get(HOME_ENV) == home and TOKEN_ENV in env and (token is None or env[TOKEN_ENV] == token):
            found.append(int(entry.name))
    return found


def kill_tree(home: str, token: str | None, exclude: tuple[int, ...] = (), limit_s: float = 30.0) -> None:
    """SIGKILL every process of the tree, again and again, until none is left (a process still starting one, e.g.
    a code server launching a run worker, cannot outlive this)."""
    deadline = time.monotonic() + limit_s
    while (pids := [p for p in tree_processes(home, token, exclude) if not _zombie(p)]) \
            and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


class Tree:
    """Take the home's lock, end what an earlier tree left, start the reaper; ``spawn`` children; ``close`` ends
    them all (SIGTERM, then SIGKILL) and releases the lock."""

    def __init__(self, dagster_home: str, what: str) -> None:
        self.home, self.token = dagster_home, uuid.uuid4().hex
        self.lock = HomeLock(dagster_home, self.token, what)
        self.children: dict[str, subprocess.Popen] = {}

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        return {**(base if base is not None else os.environ), TOKEN_ENV: self.token, HOME_ENV: self.home}

    def open(self) -> Tree:
        self.lock.acquire()
        leftovers = tree_processes(self.home, exclude=(os.getpid(),))
        if leftovers:  # an earlier tree's run workers or servers: nothing of it may run beside this one
            print(f"ending {len(leftovers)} process(es) an earlier daemon of {self.home} left", flush=True)
            kill_tree(self.home, None, exclude=(os.getpid(),))
        self.spawn("reaper", [sys.executable, "-m", "mlassets.host.reaper", self.home, self.token],
                   death_signal=signal.SIGUSR1)
        return self

    def spawn(self, name: str, command: list[str], env: dict[str, str] | None = None, out: IO[str] | None = None,
              death_signal: int = signal.SIGTERM) -> subprocess.Popen:
        """A child in this process group, holding the lock, signalled when the supervisor dies."""
        parent = os.getpid()
        proc = subprocess.Popen(command, env=self.env(env), stdout=out, stderr=subprocess.STDOUT if out else None,
                                pass_fds=(self.lock.fd,), preexec_fn=lambda: _pdeathsig(death_signal, parent))
        self.children[name] = proc
        return proc

    def dead_child(self) -> tuple[str, subprocess.Popen] | None:
        return next(((n, p) for n, p in self.children.items() if p.poll() is not None), None)

    def close(self, grace_s: float = 20.0) -> None:
        """End every process of the tree, then release the lock: first the Dagster daemon (so nothing is dequeued
        or launched while the rest stops), then the other children, then whatever is left (run workers)."""
        reaper = self.children.pop("reaper", None)
        first = [p for n, p in self.children.items() if n == "Dagster daemon"]
        for group in (first, [p for p in self.children.values() if p not in first]):
            for proc in group:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            for proc in group:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        keep = (os.getpid(), reaper.pid if reaper else 0)
        kill_tree(self.home, self.token, exclude=keep)  # grandchildren too
        if reaper is not None:
            reaper.terminate()  # SIGTERM: the tree is gone, it just exits
        for proc in [*self.children.values(), *([reaper] if reaper else [])]:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self.lock.release()

    def __enter__(self) -> Tree:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
