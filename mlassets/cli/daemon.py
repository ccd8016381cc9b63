"""``mlassets daemon``: the Dagster daemon alone on the embedded stack (sensors, schedules, the run queue), for a
machine without the UIs; ``mlassets ui`` runs the same tree beside the webserver.

One daemon per home. The command is a supervisor (``daemon_tree.Tree``) that takes the home's lock, then starts,
in its own process group: the home's one code server (``code_server``), ``dagster-daemon`` connected to it, the
run monitor (``run_monitor``) and a reaper. Whatever ends the supervisor (Ctrl-C, SIGTERM, SIGKILL) ends the tree.

``start``/``stop`` are also how the end-to-end tests and ``bench/automation.py`` run it: ``start`` runs the
supervisor in a new session, so ``stop(kill=True)`` (SIGKILL to that process group) kills the whole tree at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import IO, TYPE_CHECKING

from mlassets.core import paths
from mlassets.host.instance import get_instance, prepare_home

if TYPE_CHECKING:
    from mlassets.host.code_server import Reloader
    from mlassets.host.daemon_tree import Tree


def start(out: IO[str] | None = None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The supervisor (``python -m mlassets.cli.daemon``) in its own session, on this home's instance."""
    get_instance().dispose()  # the home, its dagster.yaml and the `gpu` pool's size, before anything starts
    full = {**os.environ, **(env or {}), "DAGSTER_HOME": prepare_home(), "MLASSETS_HOME": str(paths.home())}
    return subprocess.Popen([sys.executable, "-m", "mlassets.cli.daemon"], env=full, stdout=out,
                            stderr=subprocess.STDOUT if out else None, start_new_session=True)


def stop(proc: subprocess.Popen, kill: bool = False, timeout_s: float = 60.0) -> int:
    """SIGTERM to the supervisor, which stops its tree in order (or SIGKILL to its whole process group: a crash);
    its exit code."""
    try:
        if kill:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.send_signal(signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(timeout=timeout_s)


def start_services(tree: Tree, dagster_home: str, extra_env: dict[str, str] | None = None) -> tuple[int, Reloader]:
    """The code server (waited for), the run monitor (waited for) and the Dagster daemon in ``tree``; (port,
    reloader)."""
    from mlassets.host import code_server

    port = code_server.free_port()
    workspace = code_server.write_workspace(dagster_home, port)
    env = {**code_server.env_for(dagster_home), **(extra_env or {})}
    server = tree.spawn("code server", code_server.command(port), env)
    seconds = code_server.wait_ready(port, server)
    print(f"code server ready on {code_server.HOST}:{port} ({seconds:.0f} s)", flush=True)
    monitor = tree.spawn("run monitor", [sys.executable, "-m", "mlassets.host.run_monitor", str(workspace)], env)
    _wait_for_monitor(dagster_home, tree.token, monitor)  # runs an earlier tree left are retried before the queue runs
    tree.spawn("Dagster daemon", code_server.daemon_command(workspace), env)
    return port, code_server.Reloader(port)


def _wait_for_monitor(dagster_home: str, token: str, monitor: subprocess.Popen, timeout_s: float = 300.0) -> None:
    from mlassets.host.daemon_tree import ready_file

    deadline, ready = time.monotonic() + timeout_s, ready_file(dagster_home)
    while not (ready.is_file() and ready.read_text() == token):
        if monitor.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the run monitor did not start (exit code {monitor.poll()})")
        time.sleep(0.2)


def serve(what: str = "mlassets daemon") -> int:
    """Run until interrupted: 0 then; 2 when another daemon holds this home; 1 when a part of the tree died."""
    from mlassets.host.daemon_lock import DaemonRunning
    from mlassets.host.daemon_tree import Tree

    get_instance().dispose()
    home = prepare_home()
    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    tree = Tree(home, what)
    try:
        tree.open()
    except DaemonRunning as exc:
        print(f"mlassets daemon: error: {exc}", file=sys.stderr, flush=True)
        return 2
    code = 0
    try:
        _, reloader = start_services(tree, home)
        print(f"Dagster daemon running on {home} (sensors, schedules, run queue, run monitor); Ctrl-C stops it",
              flush=True)
        while not stopping["now"]:
            dead = tree.dead_child()
            if dead:
                print(f"mlassets daemon: error: the {dead[0]} stopped (exit code {dead[1].returncode}); stopping "
                      "the others", file=sys.stderr, flush=True)
                code = 1
                break
            try:
                if reloader.check():
                    print("configs changed: the code server reloaded the definitions", flush=True)
            except Exception as exc:  # noqa: BLE001 - a config that does not load: said; the old definitions stay
                print(f"mlassets daemon: the code server could not reload: {exc}", file=sys.stderr, flush=True)
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    except RuntimeError as exc:  # the code server did not come up
        print(f"mlassets daemon: error: {exc}", file=sys.stderr, flush=True)
        code = 1
    finally:
        tree.close()
    return code


if __name__ == "__main__":
    sys.exit(serve())
