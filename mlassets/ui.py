"""``mlassets ui``: the Dagster webserver (with its daemon), the MLflow UI and the Streamlit diagnosis dashboard
over the embedded stack (the dashboard on ``$MLASSETS_DASHBOARD_PORT``, default 8501; 0 skips it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
    dashboard_port = int(os.environ.get("MLASSETS_DASHBOARD_PORT", "8501"))
    if dashboard_port:
        out.append(dashboard_command(host, _free(host, dashboard_port)))
    return out


def _free(host: str, port: int) -> int:
    """``port`` if it can be bound on ``host``, else any free port (the dashboard must not stop the others)."""
    import socket

    for candidate in (port, 0):
        with socket.socket() as sock:
            try:
                sock.bind((host, candidate))
                return sock.getsockname()[1]
            except OSError:
                continue
    return port


def dashboard_command(host: str, port: int) -> list[str]:
    """``streamlit run dashboard/streamlit_app.py``, headless, on ``host:port``, no usage statistics."""
    app = Path(__file__).resolve().parents[1] / "dashboard" / "streamlit_app.py"
    return [os.path.join(os.path.dirname(sys.executable), "streamlit"), "run", str(app), "--server.address", host,
            "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"]


def serve(host: str = "127.0.0.1", port: int = 3000, mlflow_port: int = 5000) -> int:
    """Run until interrupted (Ctrl-C or SIGTERM); stops both servers on the way out."""
    env = {**os.environ, "DAGSTER_HOME": prepare_home(), "MLASSETS_HOME": str(paths.home())}
    env.setdefault("DAGSTER_WEBSERVER_URL", f"http://{host}:{port}")  # the dashboard's links
    env.setdefault("MLASSETS_MLFLOW_URL", f"http://{host}:{mlflow_port}")
    cmds = commands(host, port, mlflow_port)
    procs = [subprocess.Popen(cmd, env=env, preexec_fn=_default_signals) for cmd in cmds]
    dashboard = [c[c.index("--server.port") + 1] for c in cmds if "--server.port" in c]
    print(f"Dagster UI: http://{host}:{port}" + (f"   MLflow UI: http://{host}:{mlflow_port}" if mlflow_port else "")
          + (f"   dashboard: http://{host}:{dashboard[0]}" if dashboard else ""))
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
