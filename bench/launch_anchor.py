"""The anchor of ``commit_to_champion``: Dagster's own run launch of a trivial job, measured the same way.

A code location of one trivial asset, its job (the in-process executor, as the pipeline's) and a sensor on a
trigger file runs under a bare ``dagster-daemon`` on a fresh ``DAGSTER_HOME``: sqlite, Dagster's default run
launcher, the queued run coordinator dequeuing every second (as the embedded home's). After a warm-up run, each
trigger is timed in two parts: the sensor (the trigger file written -> the run it requested created: the wait for
the daemon's sensor loop, which starts an iteration every 5 s whatever the interval, and the tick), and the launch
(creation -> ``RUN_SUCCESS`` minus the step's compute: queue, a new process that imports Dagster and the location,
the run's own bookkeeping).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = 3
LOCATION = '''
from pathlib import Path

import dagster as dg

TRIGGER = Path(__file__).with_name("trigger")


@dg.asset
def trivial() -> int:
    return 1


job = dg.define_asset_job("trivial_job", [trivial], executor_def=dg.in_process_executor)


@dg.sensor(job=job, minimum_interval_seconds={interval}, default_status=dg.DefaultSensorStatus.RUNNING)
def on_trigger(context):
    text = TRIGGER.read_text() if TRIGGER.exists() else ""
    if text and text != context.cursor:
        context.update_cursor(text)
        yield dg.RunRequest(run_key=text)


defs = dg.Definitions(assets=[trivial], jobs=[job], sensors=[on_trigger])
'''
INSTANCE = """\
telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""


def _marks(instance, run_id: str) -> dict[str, float]:
    """The run's creation, its RUN_SUCCESS, and its step's compute (STEP_SUCCESS - STEP_START), in seconds."""
    marks = {"created": instance.get_run_record_by_id(run_id).create_timestamp.timestamp(), "compute": 0.0}
    for entry in instance.all_logs(run_id):
        kind = entry.dagster_event.event_type.name if entry.dagster_event else ""
        if kind == "STEP_START":
            marks["compute"] -= entry.timestamp
        elif kind == "STEP_SUCCESS":
            marks["compute"] += entry.timestamp
        elif kind in ("RUN_SUCCESS", "RUN_FAILURE"):
            marks[kind] = entry.timestamp
    return marks


def measure(interval_s: int, repeats: int = REPEATS, limit_s: float = 300.0,
            warm_up: bool = True) -> list[tuple[float, float, float, float]]:
    """``repeats`` trivial runs after a warm-up (none without ``warm_up``: the daemon's start-up then falls in the
    first): each one's (trigger -> run created by the sensor, creation -> success minus its compute, trigger -> the
    start of the sensor's tick that saw it, that tick's start -> run created), in seconds."""
    import dagster as dg

    from bench.automation import tick_start

    with tempfile.TemporaryDirectory(prefix="bench-anchor-") as tmp:
        root = Path(tmp)
        (root / "location.py").write_text(LOCATION.format(interval=interval_s))
        (root / "home").mkdir()
        (root / "home" / "dagster.yaml").write_text(INSTANCE)
        env = {**os.environ, "DAGSTER_HOME": str(root / "home")}
        daemon = Path(sys.executable).with_name("dagster-daemon")
        # the instance first: it creates the sqlite storages, which the daemon would otherwise create at the same
        # time (two alembic stampings of one schedule database: the daemon's loop fails and no run ever comes)
        instance = dg.DagsterInstance.from_config(str(root / "home"))
        with (root / "daemon.log").open("w") as log:
            proc = subprocess.Popen([str(daemon), "run", "-f", str(root / "location.py")], cwd=root, env=env,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out = []
            for i in range(1 - warm_up, repeats + 1):  # run 0 is the warm-up
                (root / "trigger").write_text(str(i))
                triggered = time.time()
                deadline = time.monotonic() + limit_s
                while True:
                    runs = instance.get_runs(dg.RunsFilter(tags={"dagster/run_key": str(i)}))
                    if runs and runs[0].is_finished:
                        break
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"anchor: no finished trivial run {i}; see {root / 'daemon.log'}:\n"
                                           + (root / "daemon.log").read_text()[-2000:])
                    time.sleep(0.1)
                marks = _marks(instance, runs[0].run_id)
                if "RUN_SUCCESS" not in marks:
                    raise RuntimeError(f"anchor: the trivial run {runs[0].run_id} failed")
                if i:
                    launch = marks["RUN_SUCCESS"] - marks["created"] - marks["compute"]
                    tick = tick_start(instance, "on_trigger", runs[0].run_id)
                    out.append((marks["created"] - triggered, launch, max(0.0, tick - triggered),
                                marks["created"] - tick))
            return out
        finally:
            instance.dispose()
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


if __name__ == "__main__":
    times = measure(1)
    print(f"sensor: median {statistics.median(t[0] for t in times):.2f} s (tick: median "
          f"{statistics.median(t[3] for t in times):.2f} s); trivial run launch: median "
          f"{statistics.median(t[1] for t in times):.2f} s of {[round(t[1], 2) for t in times]}")
