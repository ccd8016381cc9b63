"""Every registered benchmark at its toy size (``python -m bench --smoke``): its work done and checked, no goal
judged. A benchmark is parametrized here as soon as it is registered; one whose work fails, fails its test."""

from __future__ import annotations

import importlib
import math

import pytest

from bench.__main__ import MODULES, run_one
from bench.registry import registered

for _module in MODULES:
    importlib.import_module(_module)

# Smoke runs that take more than ~10 s on 2 busy cores (daemons, servers, torchrun, subprocess pipelines, a demo; as
# measured at load ~10): in `make test`, not in `make test-fast`. Benchmarks that share a measurement (the scale_*
# stages, the startup demo home) are listed together, so that test-fast never makes one for a single row.
SLOW = frozenset({
    "scale_memory", "scale_time", "scale_run_memory", "ingest_overhead", "orchestration_overhead",
    "scaling_2_ranks_compute_bound", "scaling_2_ranks_comm_bound", "fleet_preemption", "fleet_lease_release",
    "training_throughput", "plugin_throughput", "latency_gate_flips", "commit_to_champion", "versions_speed",
    "history_speed", "demo_overhead", "code_location_load", "serving_added_latency_p50",
    "serving_batching_throughput", "serving_span_sum_ratio", "serving_swap_failed_requests",
})


def _param(bench):
    marks = [pytest.mark.e2e] if bench.name in SLOW else []
    return pytest.param(bench, id=bench.name, marks=marks)


def test_every_slow_name_is_a_benchmark() -> None:
    assert SLOW <= {b.name for b in registered()}


@pytest.mark.parametrize("bench", [_param(b) for b in registered()])
def test_benchmark_smoke(bench) -> None:
    row, crashed, entry = run_one(bench, smoke=True)
    assert not crashed, f"{bench.name} crashed at its toy size: {row[-1]}"
    name, measured, _, verdict, _ = row
    assert (name, verdict) == (bench.name, "smoke")
    assert math.isfinite(float(measured.split()[0])) and entry["value"] == pytest.approx(float(measured.split()[0]),
                                                                                         rel=1e-2)
