"""Orchestration overhead: a pipeline run's wall time minus the compute time of its steps.

Compute time per step is STEP_SUCCESS (or STEP_FAILURE) minus STEP_START in the run's event log.
The floor is the same figure for an in-process ``dg.materialize`` of 7 trivial chained assets. Every run, of the
pipeline and of the floor, must succeed (``bench.checks``): a failed run's time is not a figure. Smoke mode: the
pipeline run is the demo home's (``bench.startup``: one month, the same sample, played the same way), made once for
both.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time

import dagster as dg

from bench.checks import NO_TELEMETRY, expect, expect_run
from bench.registry import Result, benchmark, smoke, toy

PIPELINE_MONTHS = 3
SAMPLE_FRACTION = 0.1
FLOOR_ASSETS = 7
FLOOR_REPEATS = 3
_ENDS = ("STEP_SUCCESS", "STEP_FAILURE")
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}  # as mlassets.cli.demo runs


def step_compute_seconds(instance: dg.DagsterInstance, run_id: str) -> float:
    """Sum over the run's steps of (STEP_SUCCESS or STEP_FAILURE) - STEP_START, in seconds."""
    started: dict[str, float] = {}
    total = 0.0
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is None or event.step_key is None:
            continue
        if event.event_type_value == "STEP_START":
            started[event.step_key] = record.timestamp
        elif event.event_type_value in _ENDS and event.step_key in started:
            total += record.timestamp - started.pop(event.step_key)
    return total


def overhead_seconds(instance: dg.DagsterInstance, run_id: str, wall: float) -> tuple[float, float]:
    """(overhead, compute) of one run whose wall time was ``wall`` seconds."""
    compute = step_compute_seconds(instance, run_id)
    return wall - compute, compute


def trivial_chain(n: int) -> list[dg.AssetsDefinition]:
    """``n`` trivial assets, each depending on the previous one."""
    chain: list[dg.AssetsDefinition] = []
    for i in range(n):
        ins = {"prev": dg.AssetIn(f"step_{i - 1}")} if i else {}

        @dg.asset(name=f"step_{i}", ins=ins)
        def step(**prev: int) -> int:
            return sum(prev.values()) + 1

        chain.append(step)
    return chain


def floor_overheads(n: int = FLOOR_ASSETS, repeats: int | None = None) -> list[float]:
    """Overhead of ``repeats`` in-process materializations of ``n`` trivial chained assets (sqlite)."""
    assets, out = trivial_chain(n), []
    repeats = toy(FLOOR_REPEATS, 1) if repeats is None else repeats
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        instance = dg.DagsterInstance.local_temp(tmp, overrides=NO_TELEMETRY)
        try:
            for _ in range(repeats):
                start = time.perf_counter()
                result = dg.materialize(assets, instance=instance, run_config=QUIET, raise_on_error=False)
                wall = time.perf_counter() - start
                expect_run(instance, result.run_id, f"floor materialization of {n} trivial assets")
                out.append(overhead_seconds(instance, result.run_id, wall)[0])
        finally:
            instance.dispose()
    return out


def pipeline_runs(months: int | None = None) -> list[tuple[float, float]]:
    """(wall, compute) of the flights pipeline for ``months`` data versions (embedded sqlite), each run by its
    data version's partition key, as ``mlassets demo`` runs them; ``WorkFailed`` when a run did not succeed or
    did not reach the gate."""
    from mlassets.cli.demo import play
    from mlassets.core.config import load_config, shipped_configs
    from mlassets.host.instance import get_instance
    from mlassets.host.runs import ingest

    if smoke() and months is None:  # smoke: the demo home's one run (the same month and sample, played alike)
        from bench.startup import demo_home

        return [_decided(p["key"], p["decision"], p["reasons"], p["wall"], p["compute"]) for p in demo_home()["plays"]]
    cfg = load_config(shipped_configs()["flights"])
    sample = toy(SAMPLE_FRACTION, 0.05)
    cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, sample_fraction=sample))
    months = toy(PIPELINE_MONTHS, 1) if months is None else months
    runs = []
    with get_instance() as instance:
        for month in cfg.dataset.partitions.keys[:months]:
            ingested = ingest(instance, cfg, month)
            expect(ingested.created, f"ingest of {month} made no new data version: {ingested.message}")
            row = play(instance, cfg, month, ingested.key, ingested.data_version)
            expect_run(instance, row.run_id, f"flights pipeline run of {ingested.key}")
            runs.append(_decided(ingested.key, row.decision, row.reasons, row.seconds,
                                 step_compute_seconds(instance, row.run_id)))
    return runs


def _decided(key: str, decision: str, reasons: list[str], wall: float, compute: float) -> tuple[float, float]:
    """``(wall, compute)`` of a run whose gate decided; ``WorkFailed`` otherwise."""
    expect(decision in ("pass", "reject"), f"flights pipeline run of {key} decided {decision!r}: {'; '.join(reasons)}")
    return wall, compute


def _s(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in values) + "]"


@benchmark("orchestration_overhead", goal="median pipeline-run overhead (wall - step compute)",
           better="lower", target=2.0)
def orchestration_overhead() -> Result:
    floor = statistics.median(floor_overheads())
    runs = pipeline_runs()
    overheads = [wall - compute for wall, compute in runs]
    median = statistics.median(overheads)
    detail = (
        f"{len(runs)} runs, all succeeded: wall med {statistics.median(r[0] for r in runs):.2f} s, "
        f"compute med {statistics.median(r[1] for r in runs):.2f} s, per-run overhead {_s(overheads)} s; "
        f"floor ({FLOOR_ASSETS} trivial assets, "
        f"materialize) {floor:.3f} s -> overhead/floor {median / floor:.1f}x"
    )
    return Result(value=median, unit="s", detail=detail)
