"""One code server per home: ``dagster code-server start -m mlassets.definitions`` on 127.0.0.1, which the daemon,
the run monitor and ``mlassets ui``'s webserver reach through a generated ``$DAGSTER_HOME/workspace.yaml``
(a ``grpc_server`` entry).

Why: given ``-m mlassets.definitions``, ``dagster-daemon`` owns its code servers and, every 60 s
(``RELOAD_WORKSPACE_INTERVAL``), drops them and starts a new ``dagster api grpc``, which imports the definitions
again; under load that was a new server every minute or two. A server the daemon only connects to is never
restarted by it. Dagster's ``code-server start`` keeps one process and reloads the definitions on request:
the supervisor asks for a reload when the configs the definitions are built from change.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

LOCATION = "mlassets"  # the code location's name (runs of the command line are tagged with it too)
HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def write_workspace(dagster_home: str, port: int, host: str = HOST) -> Path:
    """``$DAGSTER_HOME/workspace.yaml`` pointing at this home's code server."""
    path = Path(dagster_home) / "workspace.yaml"
    path.write_text("# written by mlassets daemon/ui at each start: the home's one code server\n"
                    f"load_from:\n  - grpc_server:\n      host: {host}\n      port: {port}\n"
                    f"      location_name: {LOCATION}\n")
    return path


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def command(port: int, host: str = HOST) -> list[str]:
    return [_bin("dagster"), "code-server", "start", "-m", "mlassets.definitions", "--host", host, "--port",
            str(port), "--location-name", LOCATION, "--log-level", "warning"]


def daemon_command(workspace: Path) -> list[str]:
    return [_bin("dagster-daemon"), "run", "-w", str(workspace)]


def _client(port: int, host: str = HOST):  # noqa: ANN202 - dagster's gRPC client, imported when used
    from dagster._grpc.client import DagsterGrpcClient

    return DagsterGrpcClient(port=port, host=host)


def wait_ready(port: int, proc: subprocess.Popen, timeout_s: float = 300.0, host: str = HOST) -> float:
    """Seconds until the code server answers; ``RuntimeError`` if it exits or does not answer in time."""
    started = time.monotonic()
    client = _client(port, host)
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the code server exited (code {proc.returncode}) before it answered")
        try:
            client.ping("ready")
            return time.monotonic() - started
        except Exception:  # noqa: BLE001 - not listening yet
            if time.monotonic() - started > timeout_s:
                raise RuntimeError(f"the code server did not answer on {host}:{port} within {timeout_s:.0f} "
                                   "s") from None
            time.sleep(0.5)


def config_state() -> tuple[tuple[str, int], ...]:
    """The configs the definitions are built from, with their modification times."""
    from mlassets.core.config import config_paths

    try:
        return tuple((str(p), p.stat().st_mtime_ns) for p in config_paths())
    except (OSError, ValueError):
        return ()


class Reloader:
    """Reload the code server when the configs change (a new dataset registered by ``mlassets ingest``...)."""

    def __init__(self, port: int, host: str = HOST) -> None:
        self.port, self.host, self.state = port, host, config_state()

    def check(self) -> bool:
        state = config_state()
        if state == self.state:
            return False
        self.state = state
        _client(self.port, self.host).reload_code(timeout=300)
        return True


def env_for(dagster_home: str) -> dict[str, str]:
    from mlassets.core import paths

    return {**os.environ, "DAGSTER_HOME": dagster_home, "MLASSETS_HOME": str(paths.home())}
