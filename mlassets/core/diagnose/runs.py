"""Training runs on this machine: where their telemetry lives, found by run id, data version or path.

The training asset works in ``$MLASSETS_HOME/work/<dataset>/train/<version[:16]>/<run8>/``; a run directory
holds ``result.json`` (with ``telemetry_dir``) once finished and ``telemetry/rank<r>.parquet`` always.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mlassets.core.train.outcome import RESULT


@dataclass(frozen=True)
class RunDir:
    path: Path
    telemetry_dir: Path
    dataset: str = ""
    data_version: str = ""  # the first 16 characters of the data commit (the folder name)
    run_key: str = ""  # the first 8 characters of the Dagster (root) run id
    finished: bool = False
    mtime: float = 0.0

    @property
    def label(self) -> str:
        if self.dataset:
            return f"{self.dataset} · data {self.data_version[:12]} · run {self.run_key}"
        return str(self.path)


def telemetry_of(run: Path) -> Path:
    """The telemetry folder of a run directory (``result.json``'s ``telemetry_dir``, else ``telemetry/``)."""
    result = run / RESULT
    if result.is_file():
        try:
            recorded = json.loads(result.read_text()).get("telemetry_dir")
        except (OSError, ValueError):
            recorded = None
        if recorded and Path(recorded).is_dir():
            return Path(recorded)
    return run / "telemetry" if (run / "telemetry").is_dir() else run


def list_runs(home: Path) -> list[RunDir]:
    """Every training run under ``home/work`` with telemetry, newest first."""
    runs = []
    for telemetry in (home / "work").glob("*/train/*/*/telemetry"):
        if not any(telemetry.glob("rank*.parquet")):
            continue
        run = telemetry.parent
        dataset, version, key = run.parts[-4], run.parts[-2], run.parts[-1]
        mtime = max(p.stat().st_mtime for p in telemetry.glob("rank*.parquet"))
        runs.append(RunDir(run, telemetry_of(run), dataset, version, key, (run / RESULT).is_file(), mtime))
    return sorted(runs, key=lambda r: r.mtime, reverse=True)


def resolve_run(text: str, home: Path) -> RunDir:
    """A run from a path (run or telemetry folder), a run id or data version prefix; newest match wins."""
    path = Path(text).expanduser()
    if path.is_dir():
        telemetry = telemetry_of(path)
        if not any(telemetry.glob("rank*.parquet")):
            raise ValueError(f"{path}: no rank*.parquet telemetry in it or in its telemetry/ folder")
        return RunDir(path, telemetry, mtime=path.stat().st_mtime)
    runs = list_runs(home)
    short = text.rsplit(".", 1)[-1]  # a data-version key (2013-03.6870220f) names its commit by a short id
    for run in runs:
        if text and (run.run_key.startswith(text[:8]) or run.data_version.startswith(text[:16])
                     or "." in text and len(short) >= 8 and run.data_version.startswith(short)):
            return run
    known = ", ".join(r.run_key for r in runs[:5]) or "none recorded yet"
    raise ValueError(f"no training run matches {text!r} (a path, a run id or a data version); recent runs: {known}")
