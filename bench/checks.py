"""What every benchmark checks before it reports a figure: the work it timed succeeded and made what it should.

A benchmark calls ``expect(condition, failure)`` (or a helper below) on what it timed; a false condition raises
``WorkFailed`` with the failure named, and the runner prints the row as CRASHED, with no figure, and exits 1. A
time measured on failed work (a run that stopped at its first step, a loop over no rows) is not a figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import dagster as dg

# Temporary Dagster instances of the bench: never telemetry (Dagster's default would also print its banner).
NO_TELEMETRY = {"telemetry": {"enabled": False}}


class WorkFailed(RuntimeError):
    """The work a benchmark timed failed, or did not produce what it should."""


def expect(ok: object, failure: str) -> None:
    """Raise ``WorkFailed(failure)`` unless ``ok`` is true."""
    if not ok:
        raise WorkFailed(failure)


def expect_equal(got: object, want: object, what: str) -> None:
    """``what`` must be ``want``; the failure names both."""
    expect(got == want, f"{what}: expected {want!r}, got {got!r}")


def expect_finite(values: Iterable[float], what: str) -> None:
    """Every value a positive finite number (seconds, rates, ratios of them)."""
    bad = [v for v in values if not (isinstance(v, int | float) and math.isfinite(v) and v > 0)]
    expect(not bad, f"{what}: not a positive finite number: {bad[:3]}")


def expect_files(paths: Iterable[str | Path], what: str) -> None:
    """Each path an existing, non-empty file (or a non-empty folder)."""
    for path in map(Path, paths):
        ok = path.is_file() and path.stat().st_size > 0 or path.is_dir() and any(path.iterdir())
        expect(ok, f"{what}: {path} is missing or empty")


def expect_run(instance: dg.DagsterInstance, run_id: str, what: str) -> None:
    """A Dagster run that succeeded; the failure names its status and its first failed step's error."""
    import dagster as dg

    run = instance.get_run_by_id(run_id)
    expect(run is not None, f"{what}: run {run_id} not found")
    if run.status == dg.DagsterRunStatus.SUCCESS:
        return
    errors = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        data = entry.dagster_event.step_failure_data if entry.dagster_event else None
        error = data.error if data else None
        while error is not None and error.cause is not None:  # down to what the step's own code raised
            error = error.cause
        if error is not None:
            errors.append(f"{entry.step_key}: {error.message.strip()}")
    raise WorkFailed(f"{what}: run {run_id} {run.status.value}" + (f" ({errors[0]})" if errors else ""))


def expect_trained(result: Any, rows: int, what: str) -> None:
    """A training run (``TrainingResult``) that trained on all ``rows``, took steps and wrote its model."""
    expect(result is not None, f"{what}: no training result")
    expect_equal(result.n_train, rows, f"{what}: training rows")
    expect(result.steps > 0 and math.isfinite(result.val_metric),
           f"{what}: {result.steps} steps, validation {result.val_metric_name} {result.val_metric}")
    expect_files([result.model_dir], f"{what}: model")
