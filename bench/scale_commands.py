"""Data beyond memory on the path users run: ``mlassets ingest`` and ``mlassets run`` as commands, each with the peak
RSS of its whole process tree (the command, the Dagster run it executes, the training process), sampled every
``SAMPLE_S`` seconds.

Per size (``$MLASSETS_BENCH_SCALE_ROWS``, as ``bench.scale``; by default 5M and 20M rows, the sizes the goal is
set at: about 15 minutes on 2 cores), in a home of its own: ``mlassets example
flights-scale`` data; every partition but the last ingested by one ``mlassets ingest`` (several ``--partition``); a
first ``mlassets run`` (its candidate becomes the champion); the last partition ingested; a second ``mlassets run``,
whose drift report compares the new partition with the champion's training rows. ``scale_run_memory`` is the second
run's tree peak, large size / small size. A command that fails, or a first run that makes no champion, crashes the
benchmark (naming it) instead of printing a figure; a second candidate the gate rejects (``mlassets run``'s exit
status 3: trained, evaluated and judged, its whole work done) is measured and said in the detail.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.registry import Result, benchmark
from bench.scale import GIB, partitions, run_stage, sizes
from mlassets.cli.data import REJECTED_EXIT

SAMPLE_S = 0.5
RUN_SIZES = (5_000_000, 20_000_000)  # the goal's sizes (at 1.25M/5M the fixed cost of the libraries weighs more)
_RUNS: dict[int, dict[str, dict[str, float]]] = {}


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants now (those that end meanwhile count as 0)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def measured(args: list[str], home: Path, log: Path, ok: tuple[int, ...] = (0,)) -> dict[str, float]:
    """``mlassets ARGS`` in a process of its own on ``home``: seconds, the tree's peak RSS and the exit status;
    RuntimeError (with the end of its output) when it exits with a status not in ``ok``."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "MLASSETS_HOME": str(home), "MLFLOW_DISABLE_TELEMETRY": "true",
           "DAGSTER_DISABLE_TELEMETRY": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_CONFIGS", "MLASSETS_STORE"):
        env.pop(var, None)
    start, peak = time.perf_counter(), 0
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mlassets.cli", *args], stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd=home)
        try:
            while proc.poll() is None:
                peak = max(peak, tree_rss(proc.pid))
                time.sleep(SAMPLE_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    seconds = time.perf_counter() - start
    if proc.returncode not in ok:
        raise RuntimeError(f"mlassets {' '.join(args[:3])} ... failed ({proc.returncode}):\n{log.read_text()[-3000:]}")
    return {"seconds": seconds, "peak_rss": float(peak), "status": float(proc.returncode)}


def _champion(home: Path, config: Path) -> str | None:
    code = ("import sys; from mlassets.core.config import load_config; from mlassets.core.registry.promote import "
            "live_version; print(live_version(load_config(sys.argv[1]).model.registered_name) or '')")
    env = {**os.environ, "MLASSETS_HOME": str(home), "MLFLOW_DISABLE_TELEMETRY": "true"}
    out = subprocess.run([sys.executable, "-c", code, str(config)], capture_output=True, text=True, env=env,
                         check=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else None


def run_size(rows: int, work: Path) -> dict[str, dict[str, float]]:
    run_stage("generate", work, str(rows), str(partitions()))
    config, home = work / "data" / "flights_scale.yaml", work / "home"
    home.mkdir()
    from mlassets.core.config import load_config

    keys = load_config(config).dataset.partitions.keys
    cfg = ["--config", str(config)]
    out: dict[str, dict[str, float]] = {}
    out["ingest"] = measured(["ingest", *cfg, *(a for k in keys[:-1] for a in ("--partition", k))], home,
                             work / "ingest.log")
    out["first_run"] = measured(["run", *cfg], home, work / "first_run.log")
    if _champion(home, config) is None:
        raise RuntimeError(f"the first run of {rows:,} rows made no champion:\n{(work / 'first_run.log').read_text()}")
    out["ingest_last"] = measured(["ingest", *cfg, "--partition", keys[-1]], home, work / "ingest_last.log")
    out["second_run"] = measured(["run", *cfg], home, work / "second_run.log", ok=(0, REJECTED_EXIT))
    return out


def measure() -> dict[int, dict[str, dict[str, float]]]:
    for rows in sizes(RUN_SIZES):
        if rows not in _RUNS:
            with tempfile.TemporaryDirectory(prefix=f"bench-commands-{rows}-") as tmp:
                _RUNS[rows] = run_size(rows, Path(tmp))
    return _RUNS


def _line(rows: int, run: dict[str, Any]) -> str:
    rejected = " (its candidate rejected by the gate)" if run["second_run"]["status"] == REJECTED_EXIT else ""
    return f"{rows:,} rows: " + ", ".join(f"{name} {r['seconds']:.0f} s {r['peak_rss'] / GIB:.2f} GiB"
                                          for name, r in run.items()) + rejected


@benchmark("scale_run_memory", goal="peak RSS of the process tree of the second mlassets run (with a champion), "
           "large size / small size (20M / 5M rows by default)", better="lower", target=1.15)
def scale_run_memory() -> Result:
    small, large = sizes(RUN_SIZES)
    a, b = measure()[small], measure()[large]
    detail = (f"{_line(large, b)} (goal <= 2 GiB); {_line(small, a)}; the tree sampled every {SAMPLE_S:g} s, "
              f"{partitions()} partitions, the first {partitions() - 1} in one mlassets ingest")
    return Result(b["second_run"]["peak_rss"] / a["second_run"]["peak_rss"], "x", detail)
