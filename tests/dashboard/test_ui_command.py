"""``mlassets ui`` starts the dashboard beside Dagster and MLflow, on the same loopback host."""

from __future__ import annotations

import socket

from mlassets.cli.ui import servers


def commands(host: str, port: int, mlflow_port: int) -> list[list[str]]:
    return [s.command for s in servers(host, port, mlflow_port)]


def _free() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ui_starts_streamlit_on_loopback(monkeypatch) -> None:
    monkeypatch.delenv("MLASSETS_DASHBOARD_PORT", raising=False)
    streamlit = [c for c in commands("127.0.0.1", _free(), _free()) if c[0].endswith("streamlit")]
    assert len(streamlit) == 1
    command = streamlit[0]
    assert command[1:3] == ["run", command[2]] and command[2].endswith("dashboard/streamlit_app.py")
    assert command[command.index("--server.address") + 1] == "127.0.0.1"
    assert int(command[command.index("--server.port") + 1]) > 0  # 8501, or a free port when 8501 is taken
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    monkeypatch.setenv("MLASSETS_DASHBOARD_PORT", str(free))
    (command,) = [c for c in commands("127.0.0.1", _free(), _free()) if c[0].endswith("streamlit")]
    assert command[command.index("--server.port") + 1] == str(free)
    assert command[command.index("--browser.gatherUsageStats") + 1] == "false"
    assert command[command.index("--client.toolbarMode") + 1] == "minimal"  # no "Deploy" button
    monkeypatch.setenv("MLASSETS_DASHBOARD_PORT", "0")
    assert not [c for c in commands("127.0.0.1", _free(), _free()) if c[0].endswith("streamlit")]
