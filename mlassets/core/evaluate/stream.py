"""Evaluation of a holdout, scored chunk by chunk, never held whole: the one evaluation path.

Each chunk (an Arrow table of ``features.store.split_tables``) is scored by both models (``score.score_holdout``),
its scored rows appended to the predictions file, and added to accumulators: overall metrics and calibration bins
(``accumulate``), per-slice sums and bootstrap units (``slice_sums``), the naive baseline's metrics; a multiclass
holdout's class probabilities go to ``multiclass_sums`` (counts keyed by class, the label space sorted at the end).
What stays is ``O(slice values x bootstrap groups)`` numbers (and ``O(slice values x classes^2)`` counts) and a
latency sample of at most ``LATENCY_SAMPLE_ROWS`` rows of the first chunk. A holdout that fits one batch is its
one-chunk case, and rows scored elsewhere (``evaluate_scored``, behind ``scored.evaluation_of``, ``evaluate_models``
and ``evaluate_multiclass``) go through the same accumulators as one chunk: there is no second
implementation of a metric, a slice row or an interval (see ``slice_sums`` for how the intervals are the paired
bootstrap of all rows at once).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.accumulate import ModelSums, PredictionSums
from mlassets.core.evaluate.derived import baseline_constant, derive
from mlassets.core.evaluate.multiclass_sums import MulticlassSums
from mlassets.core.evaluate.record import Evaluation, prediction_range
from mlassets.core.evaluate.slice_sums import SlicesSums
from mlassets.core.evaluate.train_target import TrainTarget, as_train_target, streamed

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from mlassets.core.data.store import VersionedStore
    from mlassets.core.evaluate.derived import Derived
    from mlassets.core.train.artifact import ModelBundle

SCORE_ROWS = 65_536  # rows scored at once (as pandas, features and model outputs): the scoring's memory bound
# what a streamed evaluation reads at once (the holdout, the training target), in MiB, at most the dataset's budget:
# rows are scored SCORE_ROWS at a time and the target only summed, so bigger batches add nothing but their working
# copies (measured at 20M rows, budget 1024: the stage's peak 0.66 GiB with batches of the dataset's budget, 0.49 here)
READ_BUDGET_MB = 64


class ValueSums:
    """A regression or binary holdout's accumulators: each model's overall metrics (``accumulate``), the candidate's
    prediction stats, the slices (``slice_sums``) and the naive baseline's metrics."""

    def __init__(self, cfg: PipelineConfig, has_champion: bool, train_y: np.ndarray | TrainTarget | None,
                 derived: Derived | None = None) -> None:
        task = cfg.dataset.task
        if train_y is None:  # rows scored elsewhere: the sanity range of ``derived``, no baseline to add up
            low, high = prediction_range(cfg, derived)
            self.constant = None
        else:
            train_y = as_train_target(train_y)
            low, high = prediction_range(cfg, derive(cfg, train_y, None, has_champion=True))  # needs no holdout
            self.constant = baseline_constant(cfg, train_y)
        self.overall = {model: ModelSums(task) for model in (["candidate", "champion"] if has_champion
                                                             else ["candidate"])}
        self.predictions, self.slices = PredictionSums(low, high), SlicesSums(cfg, has_champion)
        self.baseline = ModelSums(task) if self.constant is not None else None
        self.task, self.missing_target = task, 0

    def add(self, scored: pd.DataFrame) -> None:
        """One scored chunk (``score.score_holdout``)."""
        import numpy as np

        y = scored["y"].to_numpy(dtype=np.float64)
        self.missing_target += int(np.isnan(y).sum())
        preds = {model: scored[model].to_numpy(dtype=np.float64) for model in self.overall}
        for model, pred in preds.items():
            self.overall[model].add(y, pred)
        self.predictions.add(preds["candidate"])
        self.slices.add(scored, y, preds)
        if self.baseline is not None:
            self.baseline.add(y, np.full(y.shape, self.constant))

    def baseline_metrics(self) -> dict[str, float] | None:
        return self.baseline.metrics() if self.baseline is not None else None

    def fields(self) -> dict[str, Any]:
        """The model-dependent fields of the record of the rows added."""
        champion = self.overall.get("champion")
        calibration = None
        if self.task == "binary":
            calibration = {model: sums.calibration() for model, sums in self.overall.items()}
        return {"holdout_rows": self.overall["candidate"].n, "candidate": self.overall["candidate"].metrics(),
                "champion": champion.metrics() if champion else None, "slices": self.slices.slice_rows(),
                "slice_confidence": self.slices.level(),
                "predictions": self.predictions.stats(), "calibration": calibration}


@dataclass
class StreamedHoldout:
    """What a streamed holdout leaves: its accumulators (``ValueSums``, or ``MulticlassSums`` for a multiclass task)
    and the latency sample."""

    cfg: PipelineConfig
    sums: ValueSums | MulticlassSums
    sample: pd.DataFrame | None = None

    def evaluation(self, derived: Any = None, performance: dict[str, dict[str, float]] | None = None,
                   **context: Any) -> Evaluation:
        """The record of the rows added (``context``: champion_version, data_version,
        predictions_uri, dropped_missing_target)."""
        cfg, missing = self.cfg, self.sums.missing_target
        if missing:  # as in memory: a metric of a missing target would be NaN, blamed on the model
            raise ValueError(f"evaluation: {missing} holdout rows have no value of the target "
                             f"{cfg.dataset.target!r}; set dataset.drop_missing_target: true (or fix the data)")
        return Evaluation(
            task=cfg.dataset.task, main_metric=cfg.gate.main_metric, confidence=cfg.gate.confidence,
            performance=dict(performance or {}), baseline=derived.baseline if derived else None,
            derived=list(derived.lines) if derived else [], **self.sums.fields(), **context,
        )


def evaluate_scored(scored: pd.DataFrame, cfg: PipelineConfig, has_champion: bool, *, derived: Derived | None = None,
                    performance: dict[str, dict[str, float]] | None = None, **context: Any) -> Evaluation:
    """The record of holdout rows already scored (the columns of ``score.score_holdout``), as one chunk:
    ``derived`` gives the sanity range and the naive baseline as computed by the caller."""
    import numpy as np

    if cfg.dataset.task == "multiclass":
        sums: ValueSums | MulticlassSums = MulticlassSums(cfg, has_champion, np.empty(0))
    else:
        sums = ValueSums(cfg, has_champion, None, derived)
    sums.add(scored)
    return StreamedHoldout(cfg, sums).evaluation(derived, performance, **context)


def read_train_target(store: VersionedStore, cfg: PipelineConfig, data_version: str
                      ) -> np.ndarray | TrainTarget:
    """The training split's target as the derived thresholds read it: for a regression or binary task its
    ``TrainTarget``, batch by batch (``train_target.streamed``) in batches of ``READ_BUDGET_MB``; for a multiclass
    one the labels (the class shares)."""
    from mlassets.core.features.store import split_column, split_tables

    target = cfg.dataset.target
    if cfg.dataset.task == "multiclass":
        return split_column(store, cfg, data_version, "train", target)
    return streamed(table.column(target).to_numpy(zero_copy_only=False)
                    for table in split_tables(store, cfg, data_version, "train", [target], READ_BUDGET_MB)
                    if target in table.column_names)


def stream_holdout(
    tables: Iterable[pa.Table], cfg: PipelineConfig, candidate: ModelBundle, champion: ModelBundle | None,
    train_y: np.ndarray | TrainTarget, predictions_path: str | Path | None = None,
) -> StreamedHoldout:
    """Score every chunk with both models and add it up; the scored rows go to ``predictions_path`` (Parquet, the
    columns of ``score.score_holdout``) chunk by chunk. ``train_y``: what ``read_train_target`` reads, or the column."""
    from mlassets.core.data.batches import TableWriter
    from mlassets.core.evaluate.score import latency_sample, score_holdout

    kind = MulticlassSums if cfg.dataset.task == "multiclass" else ValueSums
    out = StreamedHoldout(cfg, kind(cfg, champion is not None, train_y))
    writer = TableWriter(predictions_path) if predictions_path is not None else None
    bundles = [b for b in (candidate, champion) if b is not None]
    for table in tables:
        for start in range(0, table.num_rows, SCORE_ROWS):  # a batch of the budget is scored a slice at a time
            holdout = table.slice(start, SCORE_ROWS).to_pandas()
            if out.sample is None:
                out.sample = latency_sample(holdout, bundles, cfg.training.seed)
            scored = score_holdout(holdout, cfg, candidate, champion)
            del holdout
            out.sums.add(scored)
            if writer is not None:
                writer.write(scored)
            del scored
        del table
    if writer is not None:
        writer.close()
    if out.sample is None:
        raise ValueError("evaluation: the holdout has no rows")
    return out


def evaluate_streamed(
    tables: Iterable[pa.Table], cfg: PipelineConfig, candidate: ModelBundle, champion: ModelBundle | None,
    train_y: np.ndarray | TrainTarget, predictions_path: str | Path | None = None, measure: Any = None,
    **context: Any,
) -> Evaluation:
    """``stream_holdout`` then its record, with the thresholds ``derived.derive`` gives (the naive baseline from
    its accumulated metrics); ``measure(sample)`` returns the performance entry (latency, size), if given."""
    if cfg.dataset.task != "multiclass":
        train_y = as_train_target(train_y)  # once, for the accumulators and the thresholds
    holdout = stream_holdout(tables, cfg, candidate, champion, train_y, predictions_path)
    derived = derive(cfg, train_y, None, has_champion=champion is not None,
                     baseline_metrics=holdout.sums.baseline_metrics())
    performance = measure(holdout.sample) if measure is not None else None
    return holdout.evaluation(derived, performance, **context)


def evaluate_logged(
    tables: Iterable[pa.Table], cfg: PipelineConfig, bundles: dict[str, ModelBundle], dirs: dict[str, Any],
    train_y: np.ndarray | TrainTarget, artifact_path: str, **context: Any,
) -> Evaluation:
    """The evaluation asset's streaming path: ``evaluate_streamed`` with latency and size measured as in memory
    (``score.measure_models``, on the sample) and the predictions file stored in the active MLflow run."""
    import tempfile

    from mlassets.core.evaluate import score

    def measure(sample: pd.DataFrame) -> dict[str, dict[str, float]]:
        return score.measure_models(bundles, dirs, sample, cfg.training.seed, cfg.gate.confidence,
                                    threads=cfg.training.threads)

    with tempfile.TemporaryDirectory(prefix="mlassets-evaluation-") as tmp:
        path = Path(tmp) / score.PREDICTIONS
        result = evaluate_streamed(tables, cfg, bundles["candidate"], bundles.get("champion"), train_y, path, measure,
                                   **context)
        uri = score.log_predictions_file(path, artifact_path)
    return dataclasses.replace(result, predictions_uri=uri)
