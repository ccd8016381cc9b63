"""Processes that open a new embedded tracking store at once all succeed: the first one creates and migrates the
sqlite tables while the others wait (without the lock they fail on each other's tables and columns)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow

from mlassets.core import tracking

CODE = "from mlassets.core import tracking; print(tracking.configure())"


def test_four_processes_open_a_new_tracking_store_at_once(home: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", CODE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    assert [code for code, _, _ in results] == [0, 0, 0, 0], [err[-1500:] for code, _, err in results if code]
    assert len({out.strip() for _, out, _ in results}) == 1  # one experiment, the same id for all
    tracking.configure()
    assert [e.name for e in mlflow.search_experiments()].count(tracking.EXPERIMENT) == 1
