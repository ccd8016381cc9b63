"""`mlassets fleet`: submit admits or refuses (exit 1, the numbers, nothing queued), a bad number flag is one
sentence naming it, the status lists the queue, the Kubernetes and Dagster renderings come out as YAML, and serve
stops on SIGINT or SIGTERM with the jobs it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mlassets.cli import main
from mlassets.examples.fleet import write_fleet_example

REPO = Path(__file__).resolve().parents[2]


def test_submit_status_and_renderings(home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    write_fleet_example(tmp_path / "jobs")
    monkeypatch.setenv("MLASSETS_FLEET", str(tmp_path / "jobs" / "fleet.yaml"))
    urgent = str(tmp_path / "jobs" / "urgent" / "job.json")
    assert main(["fleet", "submit", "--job", urgent, "--name", "too-dear", "--ranks", "2", "--capacity", "on-demand",
                 "--expected-minutes", "600", "--checkpoint-every-minutes", "10"]) == 1
    assert "refused: the job costs ₹5,000 (2 GPUs x 10 h x ₹250 per GPU-hour" in capsys.readouterr().err
    assert main(["fleet", "submit", "--job", str(tmp_path / "jobs" / "batch" / "job.json")]) == 0
    assert "queued: 2 GPUs (2 ranks x 1), team research, batch, spot" in capsys.readouterr().out
    assert main(["fleet", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert [(q["position"], q["name"]) for q in view["queue"]] == [(1, "batch")]
    assert [j["state"] for j in view["jobs"]] == ["refused", "queued"]
    assert [j["origin"] for j in view["jobs"]] == ["fleet serve", "fleet serve"]
    assert not (Path(home) / "dagster").exists()  # no Dagster instance in the home: none is created to be read
    assert main(["fleet", "submit", "--job", urgent, "--gpus-per-rank", "0"]) == 2
    assert "--gpus-per-rank: 0 is out of range (a whole number from 1 to 64)" in capsys.readouterr().err
    assert main(["fleet", "kueue", "--config", "flights", "--team", "product", "--ranks", "2"]) == 0
    kinds = [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out)]
    assert kinds[-1] == "TrainJob" and kinds.count("LocalQueue") == kinds.count("ClusterQueue") == 9  # 3 per team
    assert main(["fleet", "kueue", "--config", "flights", "--kind", "PyTorchJob", "--ranks", "2"]) == 0
    assert [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out)][-1] == "PyTorchJob"
    assert main(["fleet", "kueue", "--config", "flights", "--team", "nobody"]) == 2
    assert "fleet.team: 'nobody' is not a team of the fleet" in capsys.readouterr().err
    assert main(["fleet", "dagster-yaml"]) == 0
    limits = yaml.safe_load(capsys.readouterr().out)["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {d["value"]: d["limit"] for d in limits} == {"research": 4, "product": 2, "default": 1}


@pytest.mark.parametrize(("flags", "sentence"), [
    (["--ranks", "9999999999999", "--gpus-per-rank", "9999999999999"],
     "--ranks: 9999999999999 is out of range (a whole number from 1 to 65536)"),
    (["--gpus-per-rank", "9999999999999"],
     "--gpus-per-rank: 9999999999999 is out of range (a whole number from 1 to 64)"),
    (["--checkpoint-every-minutes", "nan"],
     "--checkpoint-every-minutes: nan is out of range (a finite number from 0 to 525600)"),
    (["--checkpoint-every-minutes", "-1"], "--checkpoint-every-minutes: -1.0 is out of range"),
    (["--expected-minutes", "inf"], "--expected-minutes: inf is out of range (a finite number above 0 to 525600)"),
    (["--expected-minutes", "0"], "--expected-minutes: 0.0 is out of range"),
    (["--ranks", "2.5"], "--ranks: '2.5' is not a whole number"),
    (["--expected-minutes", "ten"], "--expected-minutes: 'ten' is not a number"),
])
def test_numeric_flags_give_one_sentence_naming_the_flag_and_record_nothing(
        flags: list[str], sentence: str, home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_fleet_example(tmp_path / "jobs")
    monkeypatch.setenv("MLASSETS_FLEET", str(tmp_path / "jobs" / "fleet.yaml"))
    for verb in (["submit", "--job", str(tmp_path / "jobs" / "batch" / "job.json")], ["kueue", "--config", "flights"]):
        assert main(["fleet", *verb, *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"mlassets: error: {sentence}") and err.count("\n") == 1, err  # one line, no traceback
    assert not (Path(home) / "fleet.db").exists()  # nothing was submitted


def test_submit_loads_neither_dagster_nor_torch_nor_the_other_commands(tmp_path: Path) -> None:
    """`mlassets fleet submit` imports what it uses: the config, the fleet and the job file (python -X importtime
    shows the rest of the CLI's groups, the training launcher and the data stack each cost more than its check)."""
    write_fleet_example(tmp_path / "jobs")
    code = ("import sys\nfrom mlassets.cli import main\n"
            f"assert main(['fleet', 'submit', '--job', {str(tmp_path / 'jobs' / 'batch' / 'job.json')!r}]) == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dagster', 'torch', 'mlflow', 'pandas', "
            "'pyarrow', 'polars') or m in ('mlassets.cli.data', 'mlassets.cli.doctor', 'mlassets.core.train.launch', "
            "'mlassets.defs')))")
    env = {**os.environ, "MLASSETS_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO),
           "MLASSETS_FLEET": str(tmp_path / "jobs" / "fleet.yaml")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "queued: 2 GPUs" in out.stdout and out.stdout.strip().splitlines()[-1] == "[]"


def _serve(tmp_path: Path, ignore_sigint: bool = False) -> tuple[subprocess.Popen[str], int]:
    """`mlassets fleet serve` running one job (a `sleep`); returns it and the job's process id."""
    from mlassets.core.fleet.config import SHIPPED, load_fleet
    from mlassets.core.fleet.service import fleet_table, submit
    from mlassets.core.fleet.spec import JobSpec

    db, path = tmp_path / "fleet.db", tmp_path / "fleet.yaml"
    data = yaml.safe_load(SHIPPED.read_text())
    data["lease"] = {"seconds": 7200, "heartbeat_s": 3600}  # a tick an hour: only the signal ends the wait
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    spec = JobSpec(team="research", priority="batch", ranks=1, gpus_per_rank=1, expected_minutes=10.0,
                   capacity="spot", preemptible=True, checkpoint_every_minutes=5.0)
    submit(fleet_table(db), load_fleet(path), "sleeper", spec, ["sleep", "600"])
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def preexec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignore_sigint else signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-m", "mlassets.cli", "fleet", "--fleet", str(path), "--db", str(db),
                             "serve"], env=env,
                            preexec_fn=preexec, text=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jobs = fleet_table(db).jobs("running")
        if jobs and jobs[0]["pid"]:
            return proc, jobs[0]["pid"]
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the job never started")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize(("sig", "ignored"), [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)])
def test_serve_stops_on_sigint_or_sigterm_and_stops_its_jobs(tmp_path: Path, sig: int, ignored: bool) -> None:
    """Between ticks (a heartbeat apart, an hour here) the signal ends the wait; a SIGINT the shell left ignored (a
    background job of a script) stops it too."""
    proc, pid = _serve(tmp_path, ignore_sigint=ignored)
    proc.send_signal(sig)
    try:
        assert proc.wait(timeout=600) == 0, proc.stderr.read()  # not the hour's tick
    finally:
        proc.kill()
    deadline = time.monotonic() + 30
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid)
