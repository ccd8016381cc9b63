"""One daemon per home: an exclusive ``flock`` on ``$DAGSTER_HOME/mlassets-daemon.lock``.

``mlassets daemon`` and ``mlassets ui`` take it before starting anything. The lock's file descriptor is inherited
by the tree's direct children (``pass_fds``), so the kernel releases it only when the supervisor *and* every one
of them have exited: a second daemon cannot start while an orphan of the first one still runs. The file holds the
holder's pid, token and start time, for the error a second one prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = "mlassets-daemon.lock"


class DaemonRunning(RuntimeError):
    """Another ``mlassets daemon`` or ``mlassets ui`` holds this home."""


@dataclass(frozen=True)
class Holder:
    pid: int
    token: str
    what: str
    started: float

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        return f"{self.what} (pid {self.pid}, since {since})"


def lock_path(dagster_home: str | Path) -> Path:
    return Path(dagster_home) / LOCK_NAME


def read_holder(dagster_home: str | Path) -> Holder | None:
    """Who wrote the lock file last (it may have died since: see ``held``)."""
    try:
        data = json.loads(lock_path(dagster_home).read_text() or "{}")
        return Holder(int(data["pid"]), str(data["token"]), str(data["what"]), float(data["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def held(dagster_home: str | Path) -> bool:
    """Whether a daemon tree holds the lock now (without taking it)."""
    path = lock_path(dagster_home)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class HomeLock:
    """``acquire`` or ``DaemonRunning``; ``fd`` is passed to the children so the lock outlives an orphan."""

    def __init__(self, dagster_home: str | Path, token: str, what: str) -> None:
        self.path, self.token, self.what = lock_path(dagster_home), token, what
        self.fd: int | None = None

    def acquire(self, wait_for_dying_s: float = 90.0) -> None:
        """Take the lock. A live holder is refused at once; a holder whose supervisor died is a tree still being
        ended by its reaper, waited for up to ``wait_for_dying_s``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait_for_dying_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = read_holder(self.path.parent)
                if (holder is None or _alive(holder.pid)) or time.monotonic() > deadline:
                    os.close(fd)
                    who = holder.describe() if holder else "another mlassets daemon"
                    raise DaemonRunning(f"{who} already runs on {self.path.parent} (it holds {self.path}); one "
                                        "daemon per home: stop it first, or use another MLASSETS_HOME") from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "token": self.token, "what": self.what,
                                  "started": time.time()}).encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
