"""Benchmark results kept and compared: each measuring run of ``python -m bench`` writes its rows as JSON, with the
machine they were measured on (CPU model, cores, library versions), and its printed table beside it, under
``bench/results/`` (``$MLASSETS_BENCH_RESULTS`` elsewhere). ``python -m bench compare [OLD NEW]`` prints each figure of
NEW over OLD (by default the newest result and the newest before it from the same kind of machine) and flags a
regression: a change for the worse beyond the noise NEW measured (its interval, where the figure has one; else
``NOISE``). Smoke runs write nothing: a toy size's figure is no result.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS_ENV = "MLASSETS_BENCH_RESULTS"
LIBRARIES = ("torch", "dagster", "mlflow", "polars", "pandas", "numpy", "pyarrow", "lightgbm")
NOISE = 0.10  # a figure without an interval: a change for the worse by more than this share is flagged
COMPARE_HEADER = ("name", "before", "after", "after / before", "change")


def results_dir() -> Path:
    """``$MLASSETS_BENCH_RESULTS``, else ``bench/results`` beside this module."""
    return Path(os.environ.get(RESULTS_ENV) or Path(__file__).resolve().parent / "results")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """What the figures were measured on: CPU model, cores, OS, Python and the libraries' versions."""
    versions = {}
    for lib in LIBRARIES:
        try:
            versions[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            versions[lib] = None
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "system": platform.platform(),
            "python": platform.python_version(), "libraries": versions}


def kind(mach: dict[str, Any]) -> tuple[str, int]:
    """The kind of machine results are compared within: CPU model and core count."""
    return str(mach.get("cpu")), int(mach.get("cores") or 0)


def save(entries: list[dict[str, Any]], table: str, directory: Path | None = None,
         now: datetime | None = None) -> Path:
    """Write ``entries`` (the runner's rows as numbers) and the machine as ``<UTC time>.json``, and ``table`` beside
    it as ``<UTC time>.txt``; return the JSON's path."""
    directory = directory or results_dir()
    directory.mkdir(parents=True, exist_ok=True)
    now = now or datetime.now(UTC)
    stem = now.strftime("%Y%m%dT%H%M%S%fZ")
    path = directory / f"{stem}.json"
    path.write_text(json.dumps({"measured_at": now.isoformat(), "machine": machine(), "results": entries}, indent=1)
                    + "\n")
    (directory / f"{stem}.txt").write_text(table + "\n")
    return path


def load(path: Path) -> dict[str, Any]:
    """A stored result; ``ValueError`` naming the file when it is not one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a stored bench result ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list) or "machine" not in data:
        raise ValueError(f"{path}: not a stored bench result (no machine or results)")
    return data


def latest_pair(directory: Path | None = None) -> tuple[Path, Path]:
    """(older, newer): the newest stored result and the newest before it from the same kind of machine."""
    directory = directory or results_dir()
    paths = sorted(p for p in directory.glob("*.json") if re.fullmatch(r"\d{8}T\d+Z", p.stem))
    if not paths:
        raise ValueError(f"no stored bench results in {directory}: run python -m bench first")
    newer = paths[-1]
    want = kind(load(newer)["machine"])
    for older in reversed(paths[:-1]):
        if kind(load(older)["machine"]) == want:
            return older, newer
    raise ValueError(f"{newer.name} is the only stored result from this kind of machine ({want[0]}, {want[1]} cores) "
                     f"in {directory}")


def change(before: dict[str, Any], after: dict[str, Any]) -> tuple[float, str]:
    """``after``'s figure over ``before``'s and what the change is: ``better``, ``worse`` (within the noise),
    ``REGRESSION`` (worse beyond the noise ``after`` measured) or ``crashed``."""
    old, new = before.get("value"), after.get("value")
    if new is None:
        return math.nan, "crashed"
    if old is None or old == 0:
        return math.nan, "new"
    ratio = new / old
    lower = after.get("better", "lower") == "lower"
    if (ratio <= 1) if lower else (ratio >= 1):
        return ratio, "better" if ratio != 1 else "same"
    low, high = after.get("low"), after.get("high")
    if low is not None and high is not None and math.isfinite(high):
        beyond = low > old if lower else high < old  # the whole interval worse than the old figure
    else:
        beyond = ratio > 1 + NOISE if lower else ratio < 1 - NOISE
    return ratio, "REGRESSION" if beyond else "worse (noise)"


def compare(older: dict[str, Any], newer: dict[str, Any]) -> tuple[list[tuple[str, ...]], int]:
    """The compare table's rows for the benchmarks both results hold, and how many regressed."""
    before = {e["name"]: e for e in older["results"]}
    rows, regressions = [], 0
    for entry in newer["results"]:
        if entry["name"] not in before:
            continue
        old = before[entry["name"]]
        ratio, said = change(old, entry)
        regressions += said == "REGRESSION"
        rows.append((entry["name"], _figure(old), _figure(entry), "-" if math.isnan(ratio) else f"{ratio:.3f}", said))
    return rows, regressions


def _figure(entry: dict[str, Any]) -> str:
    if entry.get("value") is None:
        return "CRASHED"
    text = f"{entry['value']:.3g} {entry.get('unit', '')}".rstrip()
    if entry.get("low") is not None and entry.get("high") is not None:
        text += f" [{entry['low']:.3g}, {entry['high']:.3g}]"
    return text
