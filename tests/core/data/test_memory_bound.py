"""A stage's memory follows the budget, not the data: ingest, validation and features each run in a process of
their own on a generated month, and what each holds above the libraries stays well below what the month takes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.scale import run_stage

ROWS = 600_000  # one month: about 200 MB as a pandas frame, 35 MB of Parquet
BUDGET_MB = 64
IMPORTS = ("import pandas, pyarrow.parquet, polars, pandera.pandas, pandera.polars; "
           "import mlassets.core.data.ingest, mlassets.core.data.snapshot, mlassets.core.features.store; ")
PEAK = ("print([int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")


def _peak(code: str) -> int:
    out = subprocess.run([sys.executable, "-c", IMPORTS + code + PEAK], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("memory")
    run_stage("generate", work, str(ROWS), "1")
    config = work / "data" / "flights_scale.yaml"
    data = yaml.safe_load(config.read_text())
    data["dataset"]["memory_budget_mb"] = BUDGET_MB
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return work


@pytest.mark.e2e  # processes: in `make test`, not `make test-fast`
def test_each_stage_holds_far_less_than_the_month(work: Path) -> None:
    month = next((work / "data" / "data").glob("*.parquet"))
    libraries = _peak("")
    whole = _peak(f"frame = pandas.read_parquet({str(month)!r}); ") - libraries  # holding the version
    assert whole > 150 * 2**20, f"the month takes only {whole / 2**20:.0f} MiB in memory: too small to tell"
    held = {stage: run_stage(stage, work)["peak_rss"] - libraries for stage in ("ingest", "validate", "features")}
    print({s: f"{v / 2**20:.0f} MiB" for s, v in held.items()}, f"whole month {whole / 2**20:.0f} MiB")
    for stage, extra in held.items():
        assert extra < whole / 2, f"{stage} held {extra / 2**20:.0f} MiB above the libraries; the month takes " \
                                  f"{whole / 2**20:.0f} MiB"
