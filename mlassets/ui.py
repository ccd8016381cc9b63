"""``mlassets ui``: the Dagster webserver (with its daemon) and the MLflow UI over the embedded stack."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from mlassets.core import paths
from mlassets.instance import prepare_home


def _default_signals() -> None:
    # A background job of a non-interactive shell inherits SIGINT/SIGTERM ignored; dagster dev would too.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def commands(host: str, port: int, mlflow_port: int) -> list[list[str]]:
    bin_dir = os.path.dirname(sys.executable)
    out = [[os.path.join(bin_dir, "dagster"), "dev", "-m", "mlassets.definitions", "-h", host, "-p", str(port)]]
    if mlflow_port:
        out.append([os.path.join(bin_dir, "mlflow"), "server", "--backend-store-uri", paths.mlflow_tracking_uri(),
                    "--default-artifact-root", paths.mlflow_artifact_root(), "--host", host,
                    "--port", str(mlflow_port), "--workers", "1"])
    return out


def serve(host: str = "127.0.0.1", port: int = 3000, mlflow_port: int = 5000) -> int:
    """Run until interrupted (Ctrl-C or SIGTERM); stops both servers on the way out."""
    env = {**os.environ, "DAGSTER_HOME": prepare_home(), "MLASSETS_HOME": str(paths.home())}
    procs = [subprocess.Popen(cmd, env=env, preexec_fn=_default_signals) for cmd in commands(host, port, mlflow_port)]
    print(f"Dagster UI: http://{host}:{port}" + (f"   MLflow UI: http://{host}:{mlflow_port}" if mlflow_port else ""))
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        while not stop["now"] and all(p.poll() is None for p in procs):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 20
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0
