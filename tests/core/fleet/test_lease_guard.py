"""The lease inside a pod (``mlassets fleet lease-guard``): a rank whose heartbeat is older than the
lease gets the command's processes killed and the guard exits 75; SIGTERM reaches the command (its ranks checkpoint
and exit 76, passed on); otherwise the command's own status is the guard's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlassets.cli import main
from mlassets.core.fleet.lease_guard import LEASE_LOST_EXIT

REPO = Path(__file__).resolve().parents[3]
# A rank that beat once, long ago (a frozen node's rank), then hangs; it writes its pid for the test.
FROZEN = ("import os, sys, time\nfrom mlassets.core.fleet.table import FleetTable\n"
          "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
          "FleetTable(os.environ['MLASSETS_FLEET_DB']).heartbeat(os.environ['MLASSETS_FLEET_JOB'], 0, 5, 4, "
          "now=time.time() - 10000, pid=os.getpid())\ntime.sleep(600)\n")
# A rank that checkpoints on SIGTERM and exits as preempted (76).
PREEMPTIBLE = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda s, f: sys.exit(76))\n"
               "open(sys.argv[1], 'w').write('ready')\ntime.sleep(600)\n")


def _guard(tmp_path: Path, script: str) -> subprocess.Popen[str]:
    def preexec() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)

    return subprocess.Popen(
        [sys.executable, "-m", "mlassets.cli", "fleet", "lease-guard", "--lease-seconds", "60",
         "--startup-seconds", "60", "--heartbeat-seconds", "0.2", "--lease-db", str(tmp_path / "lease.db"),
         "--job", "seed-train", "--",
         sys.executable, "-c", script, str(tmp_path / "out")],
        env={**os.environ, "PYTHONPATH": str(REPO)}, preexec_fn=preexec, text=True, stderr=subprocess.PIPE)


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"the command never started: {proc.stderr.read()}")


def test_a_lapsed_lease_kills_the_ranks_and_fails_the_pod(tmp_path: Path) -> None:
    proc = _guard(tmp_path, FROZEN)
    try:
        code = proc.wait(timeout=300)
    finally:
        proc.kill()
    err = proc.stderr.read()
    assert code == LEASE_LOST_EXIT == 75, err
    assert "lease lost: no heartbeat for" in err and "(lease 60 s)" in err
    pid = int((tmp_path / "out").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the hung rank was killed with the guard's exit


def test_sigterm_reaches_the_ranks_and_their_status_is_the_pods(tmp_path: Path) -> None:
    proc = _guard(tmp_path, PREEMPTIBLE)
    try:
        _wait_for(tmp_path / "out", proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=300) == 76
    finally:
        proc.kill()


def test_the_commands_status_is_passed_on_and_bad_arguments_are_named(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path) -> None:
    def guard(lease: str, *command: str) -> int:
        return main(["fleet", "lease-guard", "--lease-seconds", lease, "--startup-seconds", "10",
                     "--heartbeat-seconds", "1", "--lease-db", str(tmp_path / "l.db"), "--job", "j", "--", *command])

    assert guard("30", sys.executable, "-c", "raise SystemExit(3)") == 3
    assert guard("1", "true") == 2
    assert "--heartbeat-seconds 1 must be > 0 and below --lease-seconds 1" in capsys.readouterr().err
    assert guard("nan", "true") == 2
    assert "--lease-seconds nan" in capsys.readouterr().err
    assert guard("30") == 2
    assert "lease-guard: no command after --" in capsys.readouterr().err
