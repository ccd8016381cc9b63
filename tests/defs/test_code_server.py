"""The daemon keeps one code server (issue 19): given a module, ``dagster-daemon`` drops its code servers every
60 s (Dagster's ``RELOAD_WORKSPACE_INTERVAL``) and starts a new ``dagster api grpc``, which imports the
definitions again; the tree's daemon only connects to the home's one ``dagster code-server`` (whose one
``api grpc`` child holds the definitions), so past that interval the same processes still serve them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from mlassets.cli import daemon
from mlassets.core.config import CONFIGS_ENV
from mlassets.examples.sales import write_example
from mlassets.host.daemon_tree import tree_processes
from mlassets.host.instance import prepare_home
from tests.daemon_wait import until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
RELOAD_INTERVAL_S = 60  # dagster._daemon.controller.RELOAD_WORKSPACE_INTERVAL
CHECK_INTERVAL_S = 5  # dagster._daemon.controller.THREAD_CHECK_INTERVAL: how often the controller looks at the clock
# past one reload of the workspace: the controller's loop starts before the sensors' first tick (which the watch waits
# for) and reloads at its first check past the interval; 10 s more for a slow machine
WATCH_S = RELOAD_INTERVAL_S + CHECK_INTERVAL_S + 10


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _servers(home: str) -> dict[str, set[int]]:
    lines = {pid: _cmdline(pid) for pid in tree_processes(home)}
    return {"code-server": {p for p, c in lines.items() if " code-server start" in c},
            "api grpc": {p for p, c in lines.items() if " api grpc" in c}}


def test_the_daemon_keeps_one_code_server_past_its_workspace_reload(home: str, tmp_path, monkeypatch) -> None:
    from dagster._daemon import controller

    assert controller.RELOAD_WORKSPACE_INTERVAL == RELOAD_INTERVAL_S  # what this test waits past
    assert controller.THREAD_CHECK_INTERVAL == CHECK_INTERVAL_S
    config = write_example(tmp_path / "sales", months=2)
    data = yaml.safe_load(config.read_text())
    data["automation"] = {"landing": "landing", "sensor_interval_s": 1, "landing_settle_s": 1}
    config.write_text(yaml.safe_dump(data))
    monkeypatch.setenv(CONFIGS_ENV, str(config))
    dagster_home, log = prepare_home(), tmp_path / "daemon.log"
    with log.open("w") as out:
        proc = daemon.start(out)
    try:
        until("the sensor daemon at work", lambda: "Checking for new runs for sensor" in log.read_text(), proc, log,
              420)
        first = _servers(dagster_home)
        assert len(first["code-server"]) == 1 and len(first["api grpc"]) == 1, first
        deadline = time.monotonic() + WATCH_S
        while time.monotonic() < deadline:
            assert _servers(dagster_home) == first, "a code server was replaced or added"
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(1)
    finally:
        daemon.stop(proc)
    text = log.read_text()
    assert text.count("Checking for new runs for sensor") > WATCH_S // 2  # the sensors ran throughout
