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

from dashboard.version_names import NAME_TAG, keys_by_commit, readable_key
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


def _mlflow_ready() -> bool:
    uri = paths.mlflow_tracking_uri()
    return not uri.startswith("sqlite:///") or Path(uri[len("sqlite:///"):]).is_file()


def _client() -> Any:
    import mlflow

    mlflow.set_tracking_uri(paths.mlflow_tracking_uri())
    return mlflow.MlflowClient()


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


def mlflow_run_url(run_id: str) -> str:
    """An MLflow run's page in its experiment, on the training view ("" when the run is not found)."""
    from mlassets.core import tracking

    if not run_id or not _mlflow_ready():
        return ""
    try:
        experiment = _client().get_run(run_id).info.experiment_id
    except Exception:  # noqa: BLE001 - a deleted or foreign run: no link rather than a broken page
        return ""
    return f"{mlflow_url()}/#/experiments/{experiment}/runs/{run_id}{tracking.TRAINING_VIEW}"


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


# --- registry, gate results and the promotion log (records in flux: read them only here) ---

def _promotion_log() -> Any:
    from mlassets.core.registry.promotion import PromotionLog, default_url

    url = default_url()
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
        return None
    return PromotionLog(url)


def models() -> list[str]:
    """Registered model names, from the registry and the promotion log."""
    names: set[str] = set()
    if _mlflow_ready():
        names |= {m.name for m in _client().search_registered_models()}
    log = _promotion_log()
    if log is not None:
        names |= {e.model for e in log.entries()}
    return sorted(names)


def promotion_history(model: str) -> pd.DataFrame:
    """Every row of the promotion log for ``model``, with who was live until when."""
    log = _promotion_log()
    columns = ["seq", "at", "action", "from_version", "to_version", "who", "reason", "live_until"]
    rows = [vars(e) for e in log.entries(model)] if log is not None else []
    if not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows)
    applied = frame["action"].isin(["promote", "force-promote", "rollback"])
    starts = frame.loc[applied, "at"].tolist()
    frame["live_until"] = ""
    frame.loc[applied, "live_until"] = starts[1:] + ["(live)"]
    return frame[columns]


def _gate(tags: dict[str, str]) -> dict[str, Any]:
    try:
        return json.loads(tags.get("gate_result") or "{}")
    except ValueError:
        return {}


def versions(model: str) -> pd.DataFrame:
    """One row per registered version: data version (readable key), gate verdict and summary, run ids."""
    columns = ["version", "data_version", "gate_passed", "gate_summary", "mlflow_run_id", "dagster_run_id"]
    if not _mlflow_ready():
        return pd.DataFrame(columns=columns)
    found = _client().search_model_versions(f"name='{model}'")
    rows = [{"version": int(v.version), "data_version": readable_key(v.tags.get(NAME_TAG, ""),
                                                                        v.tags.get("data_commit", "")),
             "gate_passed": v.tags.get("gate_passed") == "true", "gate_summary": v.tags.get("gate_summary", ""),
             "mlflow_run_id": v.run_id or v.tags.get("mlflow_run_id", ""),
             "dagster_run_id": v.tags.get("dagster_run_id", "")} for v in found]
    return pd.DataFrame(rows, columns=columns).sort_values("version").reset_index(drop=True)


def gate_rules(model: str, version: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every gate rule with value, limit, bound (max or min), passed and reason; the slices the gate could not
    judge)."""
    from mlassets.core.evaluate.gate import GateResult

    tags = _client().get_model_version(model, str(version)).tags
    raw = _gate(tags)
    rules = GateResult.from_dict(raw).rules if raw else []
    columns = ["rule", "value", "limit", "bound", "passed", "reason"]
    frame = pd.DataFrame([{"rule": r.name, "value": r.value, "limit": r.limit, "bound": r.bound, "passed": r.passed,
                           "reason": r.reason} for r in rules], columns=columns)
    unjudged = pd.DataFrame([dict(u) for u in raw.get("unjudged", [])],  # absent in older records
                            columns=["slice", "value", "n", "min_rows"])
    return frame, unjudged


def slice_changes(model: str) -> pd.DataFrame:
    """Candidate against the champion per slice, for every version gated against one: relative change, and whether
    its limit is a maximum (a loss) or a minimum (accuracy: higher is better)."""
    rows = []
    columns = ["version", "slice", "change", "limit", "bound", "passed"]
    if not _mlflow_ready():
        return pd.DataFrame(columns=columns)
    for v in _client().search_model_versions(f"name='{model}'"):
        for r in _gate(v.tags).get("rules", []):
            if str(r.get("name", "")).startswith("slice "):
                rows.append({"version": int(v.version), "slice": r["name"][len("slice "):],
                             "change": float(r["value"]), "limit": float(r["limit"]), "bound": r.get("bound", "max"),
                             "passed": bool(r["passed"])})
    return pd.DataFrame(rows, columns=columns)


@functools.lru_cache(maxsize=32)
def _evaluation(run_id: str, path: str) -> Any:
    import tempfile

    import mlflow
    from mlflow.exceptions import MlflowException

    from mlassets.core.evaluate.record import Evaluation
    from mlassets.core.records import RecordError

    with tempfile.TemporaryDirectory() as tmp:
        try:
            local = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=path, dst_path=tmp)
            return Evaluation.from_json(Path(local).read_text())
        except (MlflowException, OSError, RecordError):
            return None


def evaluation(model: str, version: int) -> Any:
    """The evaluation record (``Evaluation``) that the run registering ``version`` logged; None where that run logged
    none (versions evaluated before the record was logged, or registered outside the pipeline)."""
    from mlassets.core.evaluate.score import EVALUATION, artifact_dir

    found = _client().get_model_version(model, str(version))
    run_id, commit = found.run_id or found.tags.get("mlflow_run_id", ""), found.tags.get("data_commit", "")
    return _evaluation(run_id, f"{artifact_dir(commit)}/{EVALUATION}") if run_id and commit else None


def metric_table(evaluation: Any) -> pd.DataFrame:
    """One row per holdout metric of the evaluation: the candidate's and the champion's value."""
    champion = evaluation.champion or {}
    rows = [{"metric": k, "candidate": v, "champion": champion.get(k)} for k, v in evaluation.candidate.items()
            if k != "n"]
    return pd.DataFrame(rows, columns=["metric", "candidate", "champion"])


def class_table(evaluation: Any) -> pd.DataFrame:
    """Multiclass: one row per class (holdout rows, whether each model knows it, precision, recall, F1); else
    empty."""
    return evaluation.class_frame()


def fleet() -> tuple[Any, Any] | None:
    """The shared GPU fleet (its config and ``FleetView``) from the lease table and the home's Dagster runs that carry
    a job spec, as ``mlassets fleet`` shows it; None when there is neither (nothing is created here)."""
    from mlassets.core.fleet.config import load_fleet
    from mlassets.core.fleet.service import fleet_table
    from mlassets.defs.fleet_view import fleet_view
    from mlassets.host.instance import existing_instance

    db = home() / "fleet.db"
    with existing_instance() as instance:
        if instance is None and not db.is_file():
            return None
        config = load_fleet()
        return config, fleet_view(fleet_table(db) if db.is_file() else None, config, instance)
