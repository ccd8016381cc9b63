"""The Benchmarks page's tables, from the results ``python -m bench`` stored as JSON under ``bench/results/``.

Read at site build time (``docs/hooks/bench_results.py``), so the page always shows the stored results. A file is
one run: an object with its ``machine`` and ``measured_at`` (or ``date``, ``started``) and its rows under
``results`` (or ``rows``, ``benchmarks``), each row an object (``name``, ``measured``, ``goal``, ``met?``,
``detail``, ...); a bare list of rows works too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlassets.cli.reference.markdown import cell, table

RESULTS = Path(__file__).resolve().parents[3] / "bench" / "results"
PREFERRED = ("name", "measured", "goal", "met?", "met", "detail")
NONE_YET = """No stored results yet. Run the benchmarks and keep their results as JSON under `bench/results/`;
this page shows every file there, newest first, the next time the site is built."""


def _rows(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    for key in ("results", "rows", "benchmarks"):
        if isinstance(data, dict) and isinstance(data.get(key), list):
            return _rows(data[key])
    raise ValueError("no list of results (keys results, rows or benchmarks)")


def _when(data: Any) -> str:
    if not isinstance(data, dict):
        return ""
    return str(next((data[k] for k in ("measured_at", "date", "started", "finished", "when") if data.get(k)), ""))


def _machine(data: Any) -> str:
    machine = data.get("machine") if isinstance(data, dict) else None
    if isinstance(machine, dict):
        return "; ".join(f"{k}: {v}" for k, v in machine.items())
    return str(machine or "")


def render_file(path: Path) -> str:
    """One stored run as a section: its date and machine, then its table (every column the rows have)."""
    try:
        data = json.loads(path.read_text())
        rows = _rows(data)
    except (OSError, ValueError) as exc:
        return f"## `{path.name}`\n\nNot readable as bench results: {cell(exc)}\n"
    seen = list(dict.fromkeys(k for r in rows for k in r))
    columns = [c for c in PREFERRED if c in seen] + [c for c in seen if c not in PREFERRED]
    head = [f"## {_when(data) or path.stem}\n"]
    if _machine(data):
        head.append(f"Machine: {cell(_machine(data))}\n")
    return "\n".join([*head, table(columns, [[r.get(c, "") for c in columns] for r in rows])])


def render_results(directory: Path = RESULTS) -> str:
    files = sorted(directory.glob("*.json"), key=lambda p: p.name, reverse=True) if directory.is_dir() else []
    if not files:
        return NONE_YET + "\n"
    return "\n".join(render_file(p) for p in files)
