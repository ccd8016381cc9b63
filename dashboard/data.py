"""Every read of the dashboard: telemetry, traces, the scaling profile, MLflow, the registry and the promotion log.

Pages call only this module. Nothing here writes: a stack that has recorded nothing yet gives empty answers
(no database is created by looking). Reads of records that are changing shape (gate results, registry
records) are kept in small functions here so they adapt in one place.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard.registry_data import _client, _mlflow_ready
from dashboard.registry_data import class_table as class_table  # the pages read everything through this module
from dashboard.registry_data import evaluation as evaluation
from dashboard.registry_data import gate_rules as gate_rules
from dashboard.registry_data import metric_table as metric_table
from dashboard.registry_data import models as models
from dashboard.registry_data import promotion_history as promotion_history
from dashboard.registry_data import slice_changes as slice_changes
from dashboard.registry_data import versions as versions
from dashboard.version_names import keys_by_commit
from mlassets.core import paths
from mlassets.core.diagnose import spans as span_data
from mlassets.core.diagnose.profile import ProfileReport, analyze, has_traces
from mlassets.core.diagnose.report import Diagnosis, diagnose_dir
from mlassets.core.diagnose.runs import RunDir, list_runs
from mlassets.core.diagnose.steps import over_steps

SCALING_FILE = Path("scaling_profile.json")  # ops/<dataset>/
SPANS_FILE = Path("traces") / "serving.jsonl"


def home() -> Path:
    return paths.home()


def dagster_url() -> str:
    """The Dagster UI, as links are made everywhere (the one UI setting, read when a page is shown)."""
    from mlassets.core.ui_urls import ui_urls

    return ui_urls().dagster


def mlflow_url() -> str:
    from mlassets.core.ui_urls import ui_urls

    return ui_urls().mlflow


def training_runs() -> list[RunDir]:
    return list_runs(home())


def _stamp(directory: Path) -> tuple[str, float]:
    files = list(directory.glob("rank*"))
    return str(directory), max((f.stat().st_mtime for f in files), default=0.0)


@functools.lru_cache(maxsize=16)
def _diagnosis(directory: str, _mtime: float) -> Diagnosis | None:
    return diagnose_dir(directory)


def diagnosis(telemetry_dir: Path) -> Diagnosis | None:
    """The run's diagnosis (cached until its telemetry changes)."""
    return _diagnosis(*_stamp(telemetry_dir))


def example_diagnosis(name: str) -> Diagnosis:
    """One of the source's worked examples (``mlassets diagnose --example``), diagnosed like a recorded run."""
    from mlassets.core.diagnose.examples import EXAMPLES
    from mlassets.core.diagnose.report import diagnose_frame

    return diagnose_frame(EXAMPLES[name]())


def numbers_diagnosis(numbers: Any) -> Diagnosis:
    """A step described by its parts (``mlassets.core.diagnose.examples.StepNumbers``), diagnosed."""
    from mlassets.core.diagnose.report import diagnose_frame

    return diagnose_frame(numbers.frame())


def step_series(d: Diagnosis) -> pd.DataFrame:
    return over_steps(d.steps)


@functools.lru_cache(maxsize=4)
def _profile(directory: str, _mtime: float) -> ProfileReport:
    return analyze(Path(directory))


def profile(run: RunDir) -> ProfileReport | None:
    """HTA's analysis of the run's ``training.profile`` traces, None when it recorded none."""
    directory = run.path / "profile"
    return _profile(*_stamp(directory)) if has_traces(directory) else None


def data_version_keys() -> dict[str, str]:
    """Data commit -> readable key (``2013-04.ff6dd3fa``) of every training run MLflow holds."""
    if not _mlflow_ready():
        return {}
    client = _client()
    found = client.search_runs([e.experiment_id for e in client.search_experiments()],
                               filter_string="tags.data_commit LIKE '%'", max_results=5000)
    return keys_by_commit([r.data.tags for r in found])


def run_links(run: RunDir) -> dict[str, str]:
    """Links to the Dagster run and the MLflow run that trained ``run`` (those it can find)."""
    links: dict[str, str] = {}
    if not run.run_key or not _mlflow_ready():
        return links
    found = _client().search_runs(
        [e.experiment_id for e in _client().search_experiments()],
        filter_string=f"tags.dagster_run_id LIKE '{run.run_key}%'", max_results=1)
    if found:
        mlflow_run = found[0]
        links["MLflow run"] = f"{mlflow_url()}/#/experiments/{mlflow_run.info.experiment_id}/runs/" \
                              f"{mlflow_run.info.run_id}"
        links["Dagster run"] = f"{dagster_url()}/runs/{mlflow_run.data.tags['dagster_run_id']}"
    return links


def _run_page(experiment: str, run_id: str) -> str:
    """An MLflow run's page in its experiment, on the training view."""
    from mlassets.core import tracking

    return f"{mlflow_url()}/#/experiments/{experiment}/runs/{run_id}{tracking.TRAINING_VIEW}"


def version_table(versions: pd.DataFrame) -> pd.DataFrame:
    """The versions (``versions(model)``) as the Models page shows them: each version's MLflow and Dagster runs as
    their pages' URLs (``mlflow_run``, ``dagster_run``; "" where there is none) in place of the bare ids."""
    ids = sorted({i for i in versions["mlflow_run_id"] if i})
    experiments: dict[str, str] = {}
    if ids and _mlflow_ready():  # one query for every run, not one per version
        client = _client()
        quoted = ", ".join(f"'{i}'" for i in ids)
        found = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                   filter_string=f"attributes.run_id IN ({quoted})", max_results=len(ids))
        experiments = {r.info.run_id: r.info.experiment_id for r in found}
    table = versions.drop(columns=["mlflow_run_id", "dagster_run_id"])
    table["mlflow_run"] = [_run_page(experiments[i], i) if i in experiments else "" for i in versions["mlflow_run_id"]]
    table["dagster_run"] = [f"{dagster_url()}/runs/{i}" if i else "" for i in versions["dagster_run_id"]]
    return table


def model_version_url(model: str, version: int | str) -> str:
    from urllib.parse import quote

    from mlassets.core import tracking

    return f"{mlflow_url()}/#/models/{quote(model, safe='')}/versions/{version}{tracking.TRAINING_VIEW}"


def scaling_profile() -> dict[str, Any] | None:
    """The newest ``scaling_profile`` measurement (the asset writes it), or None."""
    found = sorted(home().glob(f"ops/*/{SCALING_FILE.name}"), key=lambda p: p.stat().st_mtime)
    return json.loads(found[-1].read_text()) if found else None


def serving_spans() -> pd.DataFrame:
    return span_data.read_spans(home() / SPANS_FILE)


def fleet() -> tuple[Any, Any] | None:
    """The shared GPU fleet (its config and ``FleetView``) from the lease table and the home's Dagster runs that carry
    a job spec, as ``mlassets fleet`` shows it; None when there is neither (nothing is created here)."""
    from mlassets.core.fleet.config import load_fleet
    from mlassets.core.fleet.service import fleet_table
    from mlassets.defs.fleet.view import fleet_view
    from mlassets.host.instance import existing_instance

    db = home() / "fleet.db"
    with existing_instance() as instance:
        if instance is None and not db.is_file():
            return None
        config = load_fleet()
        return config, fleet_view(fleet_table(db) if db.is_file() else None, config, instance)
