"""``python -m bench [names...] [--list] [--smoke]``: run the benchmarks and print one table;
``python -m bench compare [OLD NEW]``: compare two stored results (``bench.stored``).

Exit code 0 even when goals are missed (this is a report); 1 when a benchmark crashed, which includes the work
it timed failing (``bench.checks``): its row then says CRASHED and names the failure, with no figure. A measuring
run stores its rows and machine as JSON under ``bench/results/`` (``bench.stored``). ``--smoke`` runs each at its
toy size (``bench.registry.toy``), judges no goal and stores nothing: a check that every gauge still works.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import os
import pkgutil
import sys
import tempfile
import traceback
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from bench import stored
from bench.checks import expect
from bench.registry import Benchmark, registered, smoke_mode

# every bench/*.py module: importing one registers its benchmarks (a new module needs no list)
MODULES: tuple[str, ...] = tuple(f"bench.{m.name}" for m in pkgutil.iter_modules([os.path.dirname(__file__)])
                                 if not m.name.startswith("_"))
_ENV = ("MLASSETS_HOME", "DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_CONFIGS")  # a benchmark may set them
HEADER = ("name", "measured", "goal", "met?", "detail")


@contextlib.contextmanager
def fresh_home() -> Iterator[str]:
    """A fresh temporary ``$MLASSETS_HOME`` (derived Dagster/MLflow locations and ``$MLASSETS_CONFIGS`` unset); env
    restored after."""
    saved = {var: os.environ.get(var) for var in _ENV}
    with tempfile.TemporaryDirectory(prefix="mlassets-bench-", ignore_cleanup_errors=True) as tmp:
        for var in _ENV:
            os.environ.pop(var, None)
        os.environ["MLASSETS_HOME"] = tmp
        try:
            yield tmp
        finally:
            for var, value in saved.items():
                if value is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = value


def run_one(bench: Benchmark, smoke: bool = False) -> tuple[tuple[str, ...], bool, dict]:
    """Run one benchmark in a fresh home (at its toy size with ``smoke``); return its table row, whether it
    crashed, and its row as numbers (what ``bench.stored`` keeps; ``value`` None when it crashed). A smoke row's
    verdict is ``smoke``: no goal is judged on a toy size."""
    entry = {"name": bench.name, "goal": bench.goal, "better": bench.better, "target": bench.target}
    try:
        with fresh_home(), smoke_mode(smoke):
            result = bench.fn()
        value = float(result.value)
        expect(math.isfinite(value) and value >= 0, f"{bench.name}'s figure is {value}, not a measurement")
    except Exception as exc:  # noqa: BLE001 - report the crash, keep running the others
        print(f"bench: {bench.name} crashed:", file=sys.stderr)
        traceback.print_exc()
        detail = f"{type(exc).__name__}: {exc}"
        entry.update(value=None, verdict="CRASHED", detail=detail)
        return (bench.name, "CRASHED", bench.goal_text(), "error", detail), True, entry
    measured, detail = f"{value:.3g} {result.unit}", result.detail
    entry.update(value=value, unit=result.unit, low=None, high=None, detail=detail)
    if smoke:
        entry["verdict"] = "smoke"
        return (bench.name, measured, bench.goal_text(result.unit), "smoke", detail), False, entry
    if result.interval is not None:
        measured += f" [{result.interval.low:.3g}, {result.interval.high:.3g}]"
        detail = f"{result.interval.verdict(bench.target, bench.better)}: {result.interval.text()}; {detail}"
        entry.update(low=result.interval.low, high=result.interval.high, ratios=list(result.interval.ratios))
    entry.update(verdict=bench.verdict(result), detail=detail)
    return (bench.name, measured, bench.goal_text(result.unit), entry["verdict"], detail), False, entry


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str] = HEADER) -> str:
    """A pipe-separated table; the last column is not padded."""
    lines = [header, *rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]

    def fmt(line: Sequence[str]) -> str:
        return " | ".join([*(c.ljust(w) for c, w in zip(line, widths, strict=False)), line[-1]]).rstrip()

    rule = "-+-".join("-" * w for w in [*widths, len(header[-1])])
    return "\n".join([fmt(header), rule, *(fmt(line) for line in rows)])


def compare_main(argv: Sequence[str]) -> int:
    """``python -m bench compare [OLD NEW]``: each figure of NEW over OLD, regressions flagged (``bench.stored``)."""
    parser = argparse.ArgumentParser(prog="python -m bench compare", description=stored.__doc__)
    parser.add_argument("files", nargs="*", help="OLD NEW result files (default: the newest stored result and the "
                                                "newest before it from the same kind of machine)")
    args = parser.parse_args(argv)
    if len(args.files) not in (0, 2):
        parser.error("give two result files (OLD NEW), or none")
    try:
        paths = tuple(map(Path, args.files)) or stored.latest_pair()
        older, newer = (stored.load(p) for p in paths)
    except ValueError as exc:
        parser.error(str(exc))
    if stored.kind(older["machine"]) != stored.kind(newer["machine"]):
        print(f"note: different machines: {stored.kind(older['machine'])} vs {stored.kind(newer['machine'])}")
    rows, regressions = stored.compare(older, newer)
    print(f"{paths[1].name} over {paths[0].name}")
    print(format_table(rows, stored.COMPARE_HEADER))
    print(f"{len(rows)} compared, {regressions} regression(s)")
    return 0


def main(argv: Sequence[str] | None = None, modules: Sequence[str] = MODULES) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["compare"]:
        return compare_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmarks, or groups (a module's name: startup, training, ...), "
                                                "to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--smoke", action="store_true", help="toy sizes, no goal judged: check that each still works")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")
    for module in modules:
        importlib.import_module(module)
    benches = registered()
    if args.list:
        for b in benches:
            print(f"{b.name}: {b.goal_text()}")
        return 0
    groups = {b.fn.__module__.rpartition(".")[2] for b in benches}
    unknown = sorted(set(args.names) - {b.name for b in benches} - groups)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; see --list")
    chosen = [b for b in benches if not args.names or b.name in args.names
              or b.fn.__module__.rpartition(".")[2] in args.names]
    rows, entries, crashed = [], [], False
    for bench in chosen:
        print(f"bench: running {bench.name} ...", file=sys.stderr, flush=True)
        row, failed, entry = run_one(bench, smoke=args.smoke)
        rows.append(row)
        entries.append(entry)
        crashed |= failed
    table = format_table(rows)
    print(table, flush=True)
    if not args.smoke and entries:
        print(f"bench: stored as {stored.save(entries, table)}", file=sys.stderr)
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
