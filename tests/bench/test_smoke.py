"""Every registered benchmark at its toy size (``python -m bench --smoke``): its work done and checked, no goal
judged. A benchmark is parametrized here as soon as it is registered; one whose work fails, fails its test.

Each benchmark (or each group in ``SHARED``, which share one measurement made once per process) is a test class of
its own, so that ``pytest -n 2 --dist loadscope`` (one scope per class) spreads them over the workers."""

from __future__ import annotations

import importlib
import math

import pytest

from bench.__main__ import MODULES, run_one
from bench.registry import Benchmark, registered

for _module in MODULES:
    importlib.import_module(_module)

# Smoke runs that take more than ~10 s on 2 busy cores (daemons, servers, torchrun, subprocess pipelines, a demo; as
# measured at load ~10): in `make test`, not in `make test-fast`. A group in SHARED is wholly slow or wholly fast,
# so that test-fast never makes a shared measurement for a single row.
SLOW = frozenset({
    "scale_memory", "scale_time", "scale_run_memory", "ingest_overhead", "orchestration_overhead",
    "scaling_2_ranks_compute_bound", "scaling_2_ranks_comm_bound", "fleet_preemption", "fleet_lease_release",
    "training_throughput", "plugin_throughput", "latency_gate_flips", "commit_to_champion", "versions_speed",
    "history_speed", "demo_overhead", "code_location_load", "serving_added_latency_p50",
    "serving_batching_throughput", "serving_span_sum_ratio", "serving_swap_failed_requests",
})
# benchmarks that read one measurement made once per process (bench.scale.measure, bench.startup.demo_home: in smoke
# mode orchestration_overhead's run too, bench.diagnose): one test class each, so that one worker makes it once
SHARED: tuple[tuple[str, ...], ...] = (
    ("scale_memory", "scale_time"),
    ("versions_speed", "history_speed", "code_location_load", "demo_overhead", "orchestration_overhead"),
    ("diagnose_page_1m_rows", "diagnose_page_vs_groupby"),
)


def groups() -> dict[str, list[Benchmark]]:
    """The registered benchmarks by test class: a group of ``SHARED`` together, every other one alone."""
    first = {name: group[0] for group in SHARED for name in group}
    out: dict[str, list[Benchmark]] = {}
    for bench in registered():
        out.setdefault(first.get(bench.name, bench.name), []).append(bench)
    return out


def _param(bench: Benchmark):
    marks = [pytest.mark.e2e] if bench.name in SLOW else []
    return pytest.param(bench, id=bench.name, marks=marks)


def test_every_slow_or_shared_name_is_a_benchmark() -> None:
    names = {b.name for b in registered()}
    assert SLOW <= names and {n for group in SHARED for n in group} <= names


def test_a_shared_group_is_wholly_slow_or_wholly_fast() -> None:
    for group in SHARED:
        assert len({name in SLOW for name in group}) == 1, group


def test_every_benchmark_is_in_exactly_one_class() -> None:
    assert sorted(b.name for benches in groups().values() for b in benches) == sorted(b.name for b in registered())


def _smoke_test(benches: list[Benchmark]):
    """A fresh test function (marks are per function object) parametrized over ``benches``."""

    @pytest.mark.parametrize("bench", [_param(b) for b in benches])
    def test_benchmark_smoke(self, bench: Benchmark) -> None:
        row, crashed, entry = run_one(bench, smoke=True)
        assert not crashed, f"{bench.name} crashed at its toy size: {row[-1]}"
        name, measured, _, verdict, _ = row
        assert (name, verdict) == (bench.name, "smoke")
        figure = float(measured.split()[0])
        assert math.isfinite(figure) and entry["value"] == pytest.approx(figure, rel=1e-2)

    return test_benchmark_smoke


for _first, _benches in groups().items():
    _name = "TestSmoke_" + _first
    globals()[_name] = type(_name, (), {"test_benchmark_smoke": _smoke_test(_benches), "__module__": __name__})
