"""``mlassets ui``: the Dagster webserver, the MLflow UI and the Streamlit diagnosis dashboard over the embedded
stack (the dashboard on ``--dashboard-port``, else ``$MLASSETS_DASHBOARD_PORT``, else the setting's, 8501; 0 skips
it), beside the daemon's tree: the home's lock, its one code server (on a free loopback port; the webserver reaches
it through the same workspace), the Dagster daemon and the run monitor (``mlassets.cli.daemon``). A second
``mlassets ui`` or ``mlassets daemon`` on the home is refused.

It fails fast, before starting anything, when a port is taken or the home has a daemon; says at start what it
starts and how long the last start took to be ready, then when each UI answers; and stops all of them, with a
non-zero exit, when one of them dies. The addresses it serves become the UI setting every link is made from
(``mlassets.core.ui_urls``; ports not given are the setting's). It binds no other port: links made under earlier
addresses are named at start, and redirected here (``mlassets.host.links``) only with ``--redirect-old-links``.
MLflow runs as ``mlassets.host.mlflow_ui``: opened bare, it shows the experiment's training runs, without the
GenAI view, the telemetry notice, the assistant panel or MLflow's job runner.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mlassets.cli.ui_notes import last_ready, note_ready, old_links_note, plan_text
from mlassets.core import paths, settings, tracking, ui_urls
from mlassets.host.instance import get_instance, prepare_home
from mlassets.host.links import start_redirects

READY_TIMEOUT_S = 300.0


class PortTaken(OSError):
    """A port the UI needs is in use."""


@dataclass(eq=False)  # identity: a server is a key of the ones not answering yet
class Server:
    name: str
    command: list[str]
    url: str
    health: str  # a path that answers 200 once the server is up


def port_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _free(host: str, port: int) -> int:
    """``port`` if it can be bound on ``host``, else any free port (the dashboard must not stop the others)."""
    if port_free(host, port):
        return port
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def dashboard_command(host: str, port: int) -> list[str]:
    """``streamlit run dashboard/streamlit_app.py``, headless, on ``host:port``, no usage statistics."""
    app = Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py"
    return [os.path.join(os.path.dirname(sys.executable), "streamlit"), "run", str(app), "--server.address", host,
            "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "minimal"]  # no "Deploy" button: this dashboard is served, not edited


def default_port(kind: str) -> int:
    """The port of ``kind``'s address in the UI setting when it is on this machine, else the default's."""
    url = urlsplit(ui_urls.ui_urls().of(kind))
    fallback = urlsplit(ui_urls.DEFAULTS[kind]).port or 0
    return (url.port or fallback) if url.hostname in ("127.0.0.1", "localhost") else fallback


def servers(host: str, port: int, mlflow_port: int, workspace: str = "workspace.yaml",
            dashboard_port: int | None = None) -> list[Server]:
    """What ``mlassets ui`` starts beside the daemon's tree; ``PortTaken`` names a port of Dagster or MLflow (or the
    dashboard's, when given) that is in use. The webserver loads ``workspace`` (the home's code server)."""
    asked = (("--port", port), ("--mlflow-port", mlflow_port), ("--dashboard-port", dashboard_port or 0))
    for what, wanted in asked:
        if wanted and not port_free(host, wanted):
            raise PortTaken(f"{host}:{wanted} is already in use ({what} {wanted}); stop what holds it or choose "
                            f"another with {what}")
    bin_dir = os.path.dirname(sys.executable)
    out = [Server("Dagster UI", [os.path.join(bin_dir, "dagster-webserver"), "-w", workspace, "-h", host,
                                 "-p", str(port)], f"http://{host}:{port}", "/server_info")]
    if mlflow_port:
        out.append(Server("MLflow UI", [sys.executable, "-m", "mlassets.host.mlflow_ui", "--backend-store-uri",
                                        paths.mlflow_tracking_uri(), "--default-artifact-root",
                                        paths.mlflow_artifact_root(), "--host", host, "--port", str(mlflow_port),
                                        "--workers", "1"], f"http://{host}:{mlflow_port}", "/health"))
    if dashboard_port is None:  # not asked: the setting's port, or a free one when it is taken
        dashboard_port = int(os.environ.get("MLASSETS_DASHBOARD_PORT") or default_port("dashboard"))
    if dashboard_port:
        free = _free(host, dashboard_port)
        out.append(Server("dashboard", dashboard_command(host, free), f"http://{host}:{free}", "/_stcore/health"))
    return out


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - our own loopback servers
            return response.status == 200
    except OSError:
        return False


def _training_runs_route(mlflow_port: int) -> str:
    """The experiment's training runs, as an MLflow UI route (``#/experiments/…``); "" in production."""
    if not mlflow_port or settings.production():
        return ""
    return f"#/experiments/{tracking.configure()}/runs?workflowType=machine_learning"


def _remember(planned: list[Server], redirect_old: bool = False) -> list:
    """Make the addresses served the UI setting; redirect the earlier ones (``mlassets.host.links``) when asked,
    else name them."""
    by_name = {s.name: s.url.replace("://0.0.0.0:", "://127.0.0.1:") for s in planned}
    current = ui_urls.ui_urls()
    urls = ui_urls.save(by_name.get("Dagster UI", current.dagster), by_name.get("MLflow UI", current.mlflow),
                        by_name.get("dashboard", current.dashboard))
    if not redirect_old:
        note = old_links_note(urls)
        if note:
            print(note, flush=True)
        return []
    redirects, notes = start_redirects(urls)
    for r in redirects:
        print(f"old links to {r.old} ({r.kind}) are redirected to {r.new}", flush=True)
    for note in notes:
        print(f"note: {note}", flush=True)
    return redirects


def serve(host: str = "127.0.0.1", port: int | None = None, mlflow_port: int | None = None,
          dashboard_port: int | None = None, redirect_old: bool = False, what: str = "mlassets ui") -> int:
    """Run until interrupted (Ctrl-C or SIGTERM): 0 then; 2 when a port is taken; 1 when a server died. Ports
    not given are those of the UI setting (3000, 5000 and 8501 by default); ``redirect_old``: answer on the earlier
    addresses too, with redirects; ``what``: the tree's name in the home's lock (who started it)."""
    from mlassets.cli.daemon import start_services
    from mlassets.host.daemon_lock import DaemonRunning
    from mlassets.host.daemon_tree import Tree

    port = default_port("dagster") if port is None else port
    mlflow_port = default_port("mlflow") if mlflow_port is None else mlflow_port
    home = prepare_home()
    try:
        planned = servers(host, port, mlflow_port, str(Path(home) / "workspace.yaml"), dashboard_port)
    except PortTaken as exc:
        print(f"mlassets ui: error: {exc}", file=sys.stderr)
        return 2
    get_instance().dispose()  # the home and its dagster.yaml exist, and the `gpu` pool has its size
    route = _training_runs_route(mlflow_port)
    runs_link = f"http://{host}:{mlflow_port}/{route}" if route else ""
    links = {"DAGSTER_WEBSERVER_URL": f"http://{host}:{port}", "MLASSETS_MLFLOW_URL": f"http://{host}:{mlflow_port}"}
    links = {k: v for k, v in links.items() if not os.environ.get(k)}  # the links between the UIs, in every process
    env = {**os.environ, **links, "DAGSTER_HOME": home, "MLASSETS_HOME": str(paths.home()),
           "MLFLOW_DISABLE_TELEMETRY": os.environ.get("MLFLOW_DISABLE_TELEMETRY", "true")}
    if route:
        env["MLASSETS_MLFLOW_LANDING"] = route  # the MLflow UI, opened bare, shows these runs
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    tree = Tree(home, what)
    try:
        tree.open()
    except DaemonRunning as exc:
        print(f"mlassets ui: error: {exc}", file=sys.stderr)
        return 2
    redirects, code, ready = _remember(planned, redirect_old), 0, {}
    print(plan_text([(s.name, s.url) for s in planned], last_ready(), READY_TIMEOUT_S), flush=True)
    try:
        started = time.monotonic()
        _, reloader = start_services(tree, home, links)
        procs = [tree.spawn(s.name, s.command, env) for s in planned]
        waiting = dict(zip(planned, procs, strict=True))
        while not stop["now"]:
            dead = tree.dead_child()
            if dead:
                print(f"mlassets ui: error: {dead[0]} stopped (exit code {dead[1].returncode}); stopping the "
                      "others", file=sys.stderr)
                code = 1
                break
            try:
                reloader.check()
            except Exception as exc:  # noqa: BLE001 - a config that does not load: said; the old definitions stay
                print(f"mlassets ui: the code server could not reload: {exc}", file=sys.stderr)
            for server in [s for s in waiting if _answers(s.url + s.health)]:
                waiting.pop(server)
                ready[server.name] = time.monotonic() - started
                print(f"{server.name} ready: {server.url} ({ready[server.name]:.0f} s)", flush=True)
                if not waiting:
                    note_ready(ready)
                if server.name == "MLflow UI" and runs_link:
                    print(f"  training runs: {runs_link}", flush=True)
            if waiting and time.monotonic() - started > READY_TIMEOUT_S:
                print(f"mlassets ui: error: {', '.join(s.name for s in waiting)} did not answer within "
                      f"{READY_TIMEOUT_S:.0f} s", file=sys.stderr)
                code = 1
                break
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    except RuntimeError as exc:  # the code server did not come up
        print(f"mlassets ui: error: {exc}", file=sys.stderr)
        code = 1
    finally:
        tree.close()
        for redirect in redirects:
            redirect.stop()
    return code
