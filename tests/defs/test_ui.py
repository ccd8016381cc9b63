"""``mlassets ui`` serves the demo's assets, groups and materializations on 127.0.0.1, and stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.defs.conftest import Demo

pytestmark = pytest.mark.e2e

ASSETS = "{ assetNodes { assetKey { path } groupName } }"
MATERIALIZATIONS = """{ assetOrError(assetKey: {path: ["flights", "%s"]}) {
  ... on Asset { assetMaterializations(limit: 20) { partition runId } } } }"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _wait(url: str, body: dict | None, deadline: float, proc: subprocess.Popen, log=None) -> dict:
    while time.monotonic() < deadline:
        assert proc.poll() is None, "mlassets ui exited early:\n" + (log.read_text()[-3000:] if log else "")
        try:
            return _get(url, body)
        except OSError:
            time.sleep(1)
    raise AssertionError(f"{url} did not answer in time")


def test_ui_fails_fast_when_a_port_is_taken(home: str, capsys) -> None:
    from mlassets.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["ui", "--port", str(port), "--mlflow-port", str(_free_port())]) == 2  # nothing started
    assert f"127.0.0.1:{port} is already in use (--port {port})" in capsys.readouterr().err


@contextmanager
def running_ui(home: str, log: Path, redirect: bool = True) -> Iterator[tuple[subprocess.Popen, int, int]]:
    """``mlassets ui`` over ``home`` on free ports, without the dashboard: (process, Dagster port, MLflow port);
    ``redirect``: with ``--redirect-old-links`` (the demo's links were made for other ports). Stopped with SIGTERM on
    its process group, as a terminal would; it must stop within a minute."""
    port, mlflow_port = _free_port(), _free_port()
    env = {**os.environ, "MLASSETS_HOME": home, "MLASSETS_DASHBOARD_PORT": "0"}
    env.pop("DAGSTER_HOME", None)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mlassets.cli", "ui", "--port", str(port), "--mlflow-port", str(mlflow_port),
             *(["--redirect-old-links"] if redirect else [])],
            env=env, start_new_session=True, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        yield proc, port, mlflow_port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError("mlassets ui did not stop on SIGTERM") from None


def test_ui_shows_demo_materializations(demo: Demo, tmp_path):
    log = tmp_path / "ui.log"
    with running_ui(demo.home, log) as (proc, port, mlflow_port):
        deadline = time.monotonic() + 120
        graphql = f"http://127.0.0.1:{port}/graphql"
        nodes = _wait(graphql, {"query": ASSETS}, deadline, proc, log)["data"]["assetNodes"]
        groups = {"/".join(n["assetKey"]["path"]): n["groupName"] for n in nodes}
        assert groups["flights/raw_flights"] == "flights_data" and groups["flights/champion"] == "flights_registry"
        assert groups["flights/gate_result"] == "flights_evaluation"
        assert groups["flights/snapshot"] == "flights_snapshot"
        found = _get(graphql, {"query": MATERIALIZATIONS % "candidate_model"})["data"]["assetOrError"]
        partitions = {m["partition"] for m in found["assetMaterializations"]}
        assert partitions == {row.data_version for row in demo.rows}
        name = demo.cfg.model.registered_name
        url = f"http://127.0.0.1:{mlflow_port}/api/2.0/mlflow/registered-models/get?name={name}"
        model = _wait(url, None, deadline, proc)["registered_model"]
        assert {a["alias"] for a in model.get("aliases", [])} >= {"champion"}
        with pytest.raises(OSError):  # loopback only: not reachable on another local address
            socket.create_connection((_other_address(), port), timeout=2).close()
        deadline = time.monotonic() + 30  # it says when each UI answers
        while "MLflow UI ready" not in log.read_text() or "Dagster UI ready" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.5)
        assert f"training runs: http://127.0.0.1:{mlflow_port}/#/experiments/" in log.read_text()
        assert "/runs?workflowType=machine_learning" in log.read_text()  # not MLflow's GenAI view
        page = urllib.request.urlopen(f"http://127.0.0.1:{mlflow_port}/", timeout=10).read().decode()
        assert '"mlflow.workflowType_v1": "\\"machine_learning\\""' in page  # MLflow's own setting, seeded
        assert 'location.replace("#/experiments/' in page  # opened bare: the training runs
        setting = json.loads((Path(demo.home) / "ui.json").read_text())  # what every link is made from now
        assert (setting["dagster"], setting["mlflow"]) == (f"http://127.0.0.1:{port}", f"http://127.0.0.1:{mlflow_port}")
        assert f"old links to {demo.old_urls['dagster']} (dagster) are redirected to http://127.0.0.1:{port}" \
            in log.read_text()
    assert proc.returncode is not None


def _other_address() -> str:
    """A non-loopback address of this machine (falls back to 127.0.0.2, which a 127.0.0.1 bind refuses)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
    except OSError:
        address = "127.0.0.2"
    return address if not address.startswith("127.0.0.1") else "127.0.0.2"
