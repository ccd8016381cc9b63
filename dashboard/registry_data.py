"""The dashboard's reads of MLflow's registry, the gate results its versions carry and the promotion log (records
in flux: read only here). Pages reach them through ``dashboard.data``; nothing here writes."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard.formats import readable_time
from dashboard.version_names import NAME_TAG, readable_key
from mlassets.core import paths


def _mlflow_ready() -> bool:
    uri = paths.mlflow_tracking_uri()
    return not uri.startswith("sqlite:///") or Path(uri[len("sqlite:///"):]).is_file()


def _client() -> Any:
    import mlflow

    mlflow.set_tracking_uri(paths.mlflow_tracking_uri())
    return mlflow.MlflowClient()



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
    """Every row of the promotion log for ``model``, with who was live until when (times in readable UTC)."""
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
    frame["at"], frame["live_until"] = frame["at"].map(readable_time), frame["live_until"].map(readable_time)
    return frame[columns]


def _gate(version: Any) -> dict[str, Any]:
    """The whole gate result of a model version: its training run's ``gate_result.json`` (a version's tags hold the
    verdict only), or the JSON tag of a version registered before."""
    from mlassets.core.registry.record import LEGACY_GATE

    try:
        return json.loads(version.tags.get(LEGACY_GATE) or _run_gate(version.run_id or "") or "{}")
    except ValueError:
        return {}


@functools.lru_cache(maxsize=64)
def _run_gate(run_id: str) -> str:
    import mlflow
    from mlflow.exceptions import MlflowException

    from mlassets.core.registry.record import GATE_FILE

    if not run_id:
        return ""
    try:
        return mlflow.artifacts.load_text(f"runs:/{run_id}/{GATE_FILE}")
    except (MlflowException, OSError):
        return ""


def versions(model: str) -> pd.DataFrame:
    """One row per registered version: data version (readable key), when it was registered (readable UTC), gate
    verdict and summary, run ids."""
    columns = ["version", "data_version", "registered", "gate_passed", "gate_summary", "mlflow_run_id",
               "dagster_run_id"]
    if not _mlflow_ready():
        return pd.DataFrame(columns=columns)
    found = _client().search_model_versions(f"name='{model}'")
    rows = [{"version": int(v.version), "data_version": readable_key(v.tags.get(NAME_TAG, ""),
                                                                        v.tags.get("data_commit", "")),
             "registered": readable_time(v.creation_timestamp),
             "gate_passed": v.tags.get("gate_passed") == "true", "gate_summary": v.tags.get("gate_summary", ""),
             "mlflow_run_id": v.run_id or v.tags.get("mlflow_run_id", ""),
             "dagster_run_id": v.tags.get("dagster_run_id", "")} for v in found]
    return pd.DataFrame(rows, columns=columns).sort_values("version").reset_index(drop=True)


def gate_rules(model: str, version: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every gate rule with value, limit, bound (max or min), passed and reason; the slices the gate could not
    judge)."""
    from mlassets.core.evaluate.gate import GateResult

    raw = _gate(_client().get_model_version(model, str(version)))
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
        for r in _gate(v).get("rules", []):
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
