"""Score the candidate and the champion on the same holdout rows, through each one's own preprocessing;
measure their latency and size; turn the result into the ``Evaluation`` record and MLflow metrics.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.latency import (
    CALLS,
    ROUNDS,
    interleaved_singles,
    latency_change,
    measure_batches,
    median_of_medians,
    on_cpu,
    torch_threads,
)
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.features.preprocess import Factorized, factorize_columns
from mlassets.core.train.artifact import ModelBundle, bundle_size_bytes
from mlassets.core.train.outputs import class_frame, probabilities
from mlassets.core.train.splits import class_label

PREDICTIONS = "predictions.parquet"
EVALUATION = "evaluation.json"
LATENCY_SAMPLE_ROWS = 2048
_CALL_COUNTS = ("n_single", "n_batches", "batch_rows", "latency_rounds", "threads")  # how it was measured
REFERENCE_BATCHES = 3  # the champion's batch latency is shown, not gated
_MLFLOW_BATCH = 500  # metrics per log_batch call (MLflow's limit is 1000)
_METRIC_NAME_BAD = re.compile(r"[^\w.\- ]")  # MLflow metric names: alphanumerics, _ - . space and /


def slice_frame(holdout: pd.DataFrame, columns: list[str],
                factorized: Mapping[str, Factorized] | None = None) -> pd.DataFrame:
    """The slice columns as categories of strings (so slice codes need no hashing); missing stays missing.
    ``factorized``: columns already factorized (``factorize_columns``), whose codes become the categories' codes."""
    out = {}
    for column in columns:
        values = _categories_of(holdout[column], (factorized or {}).get(column))
        if values is None:
            values = holdout[column].astype("category")
            if not all(isinstance(c, str) for c in values.cat.categories):
                values = holdout[column].astype(str).astype("category")
        out[column] = values
    return pd.DataFrame(out, index=holdout.index)


def _categories_of(series: pd.Series, factorized: Factorized | None) -> pd.Series | None:
    """``series.astype("category")`` built from its sorted factorization, where it is that: a column of strings not
    categorical already (``None`` otherwise)."""
    if factorized is None or isinstance(series.dtype, pd.CategoricalDtype):
        return None
    codes, uniques = factorized
    if not all(isinstance(u, str) for u in uniques):
        return None
    return pd.Series(pd.Categorical.from_codes(codes, categories=uniques), index=series.index, name=series.name)


def model_outputs(holdout: pd.DataFrame, bundles: list[ModelBundle]) -> tuple[list[np.ndarray], dict[str, Factorized]]:
    """Each bundle's ``predict`` of ``holdout``, with every categorical feature column factorized once for all of them
    (``factorize_columns``); the factorization is returned for the slice columns among those."""
    factorized = factorize_columns(holdout, [c for b in bundles for c in b.preprocessor.categorical if c in holdout])
    return [b.predict(holdout, factorized=factorized) for b in bundles], factorized


def score_holdout(
    holdout: pd.DataFrame, cfg: PipelineConfig, candidate: ModelBundle, champion: ModelBundle | None
) -> pd.DataFrame:
    """One row per holdout row: slice columns (as string categories), the target, each model's prediction.

    Multiclass: ``y`` is the class label, ``candidate``/``champion`` the predicted label, and every class a model
    knows has its probability column (``candidate_probability_<class>``, see ``core.train.outputs``).
    """
    outputs, factorized = model_outputs(holdout, [b for b in (candidate, champion) if b is not None])
    frame = slice_frame(holdout, cfg.dataset.slices, factorized)
    if cfg.dataset.task == "multiclass":
        target = holdout[cfg.dataset.target]
        frame["y"] = target.map(class_label).where(target.notna(), None).to_numpy(dtype=object)
        parts = [frame, class_frame(candidate.classes, outputs[0], "candidate")]
        if champion is not None:
            parts.append(class_frame(champion.classes, outputs[1], "champion"))
        else:
            parts.append(pd.DataFrame({"champion": [None] * len(holdout)}))
        return pd.concat([p.reset_index(drop=True) for p in parts], axis=1).set_axis(holdout.index)
    frame["y"] = holdout[cfg.dataset.target].to_numpy(dtype=np.float64)
    frame["candidate"] = outputs[0]
    frame["champion"] = outputs[1] if champion is not None else np.nan
    return frame


def latency_sample(holdout: pd.DataFrame, bundles: list[ModelBundle], seed: int = 0) -> pd.DataFrame:
    """Up to ``LATENCY_SAMPLE_ROWS`` random holdout rows with only the models' input columns (a request)."""
    columns = list(dict.fromkeys(c for b in bundles for c in (*b.preprocessor.categorical, *b.preprocessor.numeric)))
    rows = holdout.sample(n=min(len(holdout), LATENCY_SAMPLE_ROWS), random_state=seed)
    return rows[columns].reset_index(drop=True)


def single_stats(times: np.ndarray) -> dict[str, float]:
    """What one model's interleaved single-row calls (``[rounds, calls]`` ms) show: p50, p99 and max of every
    call (for people), the median of round medians (what the gate reads) and the counts."""
    flat = times.ravel()
    return {"single_p50_ms": float(np.percentile(flat, 50)), "single_p99_ms": float(np.percentile(flat, 99)),
            "single_max_ms": float(flat.max()), "single_median_ms": median_of_medians(times),
            "latency_rounds": float(times.shape[0]), "n_single": float(flat.size)}


def measure_models(
    bundles: dict[str, ModelBundle], dirs: dict[str, str | Path], holdout: pd.DataFrame, seed: int = 0,
    confidence: float = 0.95, rounds: int = ROUNDS, calls: int = CALLS, threads: int = 1,
) -> dict[str, dict[str, float]]:
    """Latency of every model on one shared sample at ``threads`` torch threads, single rows timed interleaved
    (``interleaved_singles``); batch latency and each saved bundle's size. With a champion, the candidate's entry
    also holds its latency change against it (``vs_champion_change``, interval ``vs_champion_ci_low`` / ``_high``),
    and every entry the share of the single-row timing this process spent on a CPU (``cpu_share``: ``on_cpu``)."""
    sample = latency_sample(holdout, list(bundles.values()), seed)
    with torch_threads(threads):
        with on_cpu() as share:
            singles = interleaved_singles({m: b.predict for m, b in bundles.items()}, sample, rounds, calls)
        batches = {m: measure_batches(b.predict, sample, 5 if m == "candidate" else REFERENCE_BATCHES)
                   for m, b in bundles.items()}
    out = {}
    for model in bundles:
        out[model] = {**single_stats(singles[model]), **batches[model], "threads": float(threads),
                      "cpu_share": share[0]}
        if dirs.get(model) is not None:
            out[model]["size_bytes"] = float(bundle_size_bytes(dirs[model]))
    if "candidate" in singles and "champion" in singles:
        change, low, high = latency_change(singles["candidate"], singles["champion"], confidence=confidence,
                                           seed=seed)
        out["candidate"].update(vs_champion_change=change, vs_champion_ci_low=low, vs_champion_ci_high=high)
    return out


def has_champion(predictions: pd.DataFrame) -> bool:
    if probabilities(predictions, "candidate") is not None:  # multiclass: the champion's probability columns
        return probabilities(predictions, "champion") is not None
    return not np.isnan(predictions["champion"].to_numpy(dtype=np.float64)).all()


def metric_key(*parts: str) -> str:
    """An MLflow-safe metric name from parts joined by ``/`` (``=``, ``:`` and the like become ``_``)."""
    clean = [_METRIC_NAME_BAD.sub("_", str(p)).strip() or "_" for p in parts]
    return "/".join("_" if p in (".", "..") else p for p in clean)


def evaluation_metrics(evaluation: Evaluation) -> dict[str, float]:
    """Flat MLflow metrics: ``holdout_<model>_<metric>``, ``<model>_<latency/size>`` and per slice
    ``slice_<metric>/<column>/<value>`` (candidate), ``slice_champion_<metric>/...`` and ``slice_n/...``."""
    out = {f"holdout_candidate_{k}": v for k, v in evaluation.candidate.items()}
    out.update({f"holdout_champion_{k}": v for k, v in (evaluation.champion or {}).items()})
    for model, perf in evaluation.performance.items():
        out.update({f"{model}_{k}": v for k, v in perf.items() if k not in _CALL_COUNTS})
    for row in evaluation.slices:
        out[metric_key("slice_n", row.slice, row.value)] = float(row.n)
        for metric, value in row.candidate.items():
            out[metric_key(f"slice_{metric}", row.slice, row.value)] = value
        for metric, value in (row.champion or {}).items():
            out[metric_key(f"slice_champion_{metric}", row.slice, row.value)] = value
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(v)}


def log_evaluation(evaluation: Evaluation) -> None:
    """The evaluation's numbers as MLflow metrics of the active run (see ``evaluation_metrics``), for charts."""
    metrics = list(evaluation_metrics(evaluation).items())
    for start in range(0, len(metrics), _MLFLOW_BATCH):
        mlflow.log_metrics(dict(metrics[start : start + _MLFLOW_BATCH]))


def log_record(evaluation: Evaluation, artifact_path: str) -> str:
    """Store the evaluation record itself (``EVALUATION``, JSON) in the active MLflow run; return its artifact URI.
    The dashboard reads it from the run that registered a version."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / EVALUATION
        path.write_text(evaluation.to_json())
        mlflow.log_artifact(str(path), artifact_path=artifact_path)
    return f"{mlflow.get_artifact_uri(artifact_path)}/{EVALUATION}"


def artifact_dir(data_version: str) -> str:
    """Where in its MLflow run the evaluation of ``data_version`` keeps its predictions and its record."""
    return f"evaluation/{data_version[:16]}"


def log_predictions(predictions: pd.DataFrame, artifact_path: str) -> str:
    """Store the scored holdout in the active MLflow run; return its artifact URI."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / PREDICTIONS
        predictions.to_parquet(path, index=False)
        return log_predictions_file(path, artifact_path)


def log_predictions_file(path: Path, artifact_path: str) -> str:
    """Store a scored holdout already written to ``path`` (named ``PREDICTIONS``; the streaming evaluation writes it
    chunk by chunk) in the active MLflow run; return its artifact URI."""
    mlflow.log_artifact(str(path), artifact_path=artifact_path)
    return f"{mlflow.get_artifact_uri(artifact_path)}/{path.name}"
