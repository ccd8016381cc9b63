"""``mlassets daemon``: the Dagster daemon alone on the embedded stack (sensors, schedules, the run queue), for a
machine without the UIs; ``mlassets ui`` runs the same daemon beside the webserver.

``start``/``stop`` are also how the end-to-end tests and ``bench/automation.py`` run it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

from mlassets.core import paths
from mlassets.instance import get_instance, prepare_home


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background job of a shell inherits them ignored
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def command() -> list[str]:
    script = Path(sys.executable).with_name("dagster-daemon")
    launcher = [str(script)] if script.is_file() else [sys.executable, "-m", "dagster._daemon"]
    return [*launcher, "run", "-m", "mlassets.definitions"]


def start(out: IO[str] | None = None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The daemon in its own process group, on this home's instance (its `gpu` pool sized first)."""
    get_instance().dispose()
    full = {**os.environ, **(env or {}), "DAGSTER_HOME": prepare_home(), "MLASSETS_HOME": str(paths.home())}
    return subprocess.Popen(command(), env=full, stdout=out, stderr=subprocess.STDOUT if out else None,
                            start_new_session=True, preexec_fn=_default_signals)


def stop(proc: subprocess.Popen, kill: bool = False, timeout_s: float = 60.0) -> int:
    """SIGTERM (or SIGKILL: a crash) to the daemon's process group; its exit code."""
    try:
        os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(timeout=timeout_s)


def serve() -> int:
    """Run until interrupted; the daemon's exit code."""
    proc = start()
    print(f"Dagster daemon running on {prepare_home()} (sensors, schedules, run queue); Ctrl-C stops it", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: stop(proc))
    try:
        return proc.wait()
    except KeyboardInterrupt:
        return stop(proc)
