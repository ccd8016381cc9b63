"""``mlassets serve`` as a user runs it: a real process on a loopback port, answering, then stopped; a model
without a champion is refused at start with the sentence ``load_champion`` gives."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from mlassets.core.registry import promote
from tests.core.registry import test_promotion as shared

reg = shared.reg
Registry = shared.Registry
FEATURES = [*shared.FLIGHTS.features.categorical, *shared.FLIGHTS.features.numeric]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mlassets.cli", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())


def _wait_ready(proc: subprocess.Popen, base: str) -> dict:
    deadline = time.monotonic() + 180
    while True:
        assert proc.poll() is None, proc.communicate()
        try:
            reply = httpx.get(f"{base}/ready", timeout=5)
            if reply.status_code == 200:
                return reply.json()
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "mlassets serve did not get ready"
        time.sleep(0.2)


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> str:
    proc.send_signal(sig)
    try:
        out, _err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _err = proc.communicate()
    return out


@pytest.mark.e2e  # processes: in `make test`, not `make test-fast`
def test_mlassets_serve_answers_on_loopback_and_a_killed_server_restarts_on_the_same_champion(reg: Registry) -> None:
    reg.add(True, True)
    promote.promote(reg.name, "1")
    promote.promote(reg.name, "2")
    promote.rollback(reg.name, reason="v2 misbehaves")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _serve(reg.name, "--config", "flights", "--port", str(port))
    try:
        assert _wait_ready(proc, base)["version"] == "1"
        rows = shared.flights_rows(3, seed=4)[FEATURES]
        answer = httpx.post(f"{base}/invocations", timeout=30,
                            json={"dataframe_split": json.loads(rows.to_json(orient="split", index=False))})
        assert answer.status_code == 200, answer.text
        assert answer.json()["version"] == "1" and len(answer.json()["predictions"]) == 3
    finally:
        out = _stop(proc, signal.SIGKILL)  # killed: no clean shutdown
    proc = _serve(reg.name, "--config", "flights", "--port", str(port))
    try:
        assert _wait_ready(proc, base)["version"] == "1"  # the log's champion again, not the newest version
    finally:
        out = _stop(proc)
    assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn shuts down, then re-raises the signal it caught
    assert f"serving {reg.name} v1 (gate passed) on http://127.0.0.1:{port}" in out


def test_mlassets_serve_refuses_a_model_without_a_champion(reg: Registry) -> None:
    reg.add(True)
    proc = _serve(reg.name, "--port", str(_free_port()))
    _out, err = proc.communicate(timeout=180)
    assert proc.returncode == 2
    assert f"mlassets serve: refused: model '{reg.name}' has no champion in the promotion log" in err


def test_mlassets_serve_binds_loopback_unless_told_otherwise() -> None:
    from mlassets.cli import build_parser

    assert build_parser().parse_args(["serve", "m"]).host == "127.0.0.1"
    assert build_parser().parse_args(["serve", "m", "--host", "0.0.0.0"]).host == "0.0.0.0"
