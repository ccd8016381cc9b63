"""What the fast paths import: building the definitions, the CLI's parsing and config checks, and the commands
that only read records. Each runs in a fresh interpreter; what it must not load would cost seconds per call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STACKS = ("torch", "optuna", "sklearn", "mlflow", "pandas", "pyarrow", "scipy", "pandera", "lightgbm", "xgboost",
          "polars", "duckdb")


def _loaded(code: str, home: Path) -> set[str]:
    """The heavy packages (and dagster) a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if '.' not in m)))"
    env = {**os.environ, "MLASSETS_HOME": str(home), "PYTHONPATH": str(REPO)}
    for var in ("MLASSETS_CONFIGS", "DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_PROFILE"):
        env.pop(var, None)
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1])) & {*STACKS, "dagster"}


def test_building_the_definitions_loads_no_training_tracking_or_dataframe_stack(tmp_path) -> None:
    loaded = _loaded("import mlassets.definitions as d\nassert d.defs().assets", tmp_path)
    assert loaded == {"dagster"}


def test_the_cli_parses_and_checks_a_config_before_importing_dagster(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset:\n  name: x\n  sourcee: files\n")
    code = ("import contextlib, io\nfrom mlassets import cli\nerr = io.StringIO()\n"
            f"with contextlib.redirect_stderr(err):\n    code = cli.main(['ingest', '--config', {str(bad)!r}, "
            "'--partition', '2024-01'])\nassert code == 2 and 'dataset.sourcee' in err.getvalue(), err.getvalue()\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    cli.main(['--help'])")
    assert _loaded(code, tmp_path) == set()


def test_history_and_versions_read_without_torch_or_mlflow(tmp_path) -> None:
    code = ("import contextlib, io\nfrom mlassets import cli\n"
            "with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert cli.main(['history']) == 2\n    assert cli.main(['versions', '--config', 'orders']) == 0")
    assert not _loaded(code, tmp_path) & {"torch", "mlflow", "optuna"}
