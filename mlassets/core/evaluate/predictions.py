"""A model's predictions of a holdout, scored chunk by chunk into one Parquet file: never held whole.

The chunks are what ``features.store.split_tables`` reads (Arrow tables of a memory budget), or frames; each is
scored ``SCORE_ROWS`` rows at a time (as the streamed evaluation scores them), its rows appended to the file
(``batches.TableWriter``), and its errors added up. A holdout given as one frame is the one-chunk case: the file
holds the same rows, in the same order, with the same columns, whatever the chunks.

Traced (OpenTelemetry, the ``mlassets.serving`` tracer): a ``read`` span per chunk read (when ``traced_read``), a
``write`` span per chunk written; the model's own ``preprocessing`` and ``model`` spans come from the bundle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from opentelemetry import trace

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.stream import SCORE_ROWS
from mlassets.core.metric_defs import MeanSums, get_metric

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

_TRACER = trace.get_tracer("mlassets.serving")
_END = object()


@dataclass(frozen=True)
class ScoredFile:
    """What a scored holdout leaves beside its file: the rows, and the error when the rows carry the target."""

    rows: int
    mae: float | None  # regression, binary
    accuracy: float | None  # multiclass


def prediction_rows(rows: pd.DataFrame, cfg: PipelineConfig, predict: Callable[[pd.DataFrame], np.ndarray |
                    pd.DataFrame], model_version: str) -> pd.DataFrame:
    """Key columns (key, time, target: those the rows hold), the prediction (a multiclass model's label and one
    probability per class) and the model version, one row per row of ``rows``, in order."""
    import pandas as pd

    ds = cfg.dataset
    keep = [c for c in dict.fromkeys([*ds.key, ds.time_column, ds.target]) if c in rows.columns]
    out = rows[keep].reset_index(drop=True).copy()
    answer = predict(rows)
    if isinstance(answer, pd.DataFrame):  # multiclass: the label and one probability per class
        out = pd.concat([out, answer.reset_index(drop=True)], axis=1)
    else:
        out["prediction"] = answer
    out["model_version"] = model_version
    return out


class _Errors:
    """The error of scored rows added up, chunk by chunk (``metric_defs``): MAE (regression, binary) or accuracy."""

    def __init__(self, cfg: PipelineConfig) -> None:
        self.target, self.multiclass = cfg.dataset.target, cfg.dataset.task == "multiclass"
        self.metric = get_metric("accuracy" if self.multiclass else "mae")
        self.rows, self.sums, self.scored = 0, MeanSums(), False

    def add(self, out: pd.DataFrame) -> None:
        import numpy as np

        from mlassets.core.train.splits import class_label

        self.rows += len(out)
        if self.target not in out or not len(out):
            return
        self.scored = True
        if self.multiclass:
            y, p = out[self.target].map(class_label).to_numpy(), out["prediction"].to_numpy()
        else:  # a missing target makes the mean NaN, as one np.mean over all rows would
            y, p = (out[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in (self.target, "prediction"))
        self.sums = self.sums + MeanSums.of(self.metric.loss(y, p))

    def result(self) -> ScoredFile:
        mean = self.metric.value(self.sums) if self.scored else None
        return ScoredFile(rows=self.rows, mae=None if self.multiclass else mean,
                          accuracy=mean if self.multiclass else None)


def _slices(chunk: pa.Table | pd.DataFrame, score_rows: int) -> Iterable[pd.DataFrame]:
    """A chunk as frames of at most ``score_rows`` rows (an empty chunk as one empty frame: it gives the columns)."""
    import pandas as pd

    if isinstance(chunk, pd.DataFrame):
        for start in range(0, max(len(chunk), 1), score_rows):
            yield chunk.iloc[start:start + score_rows]
        return
    for start in range(0, max(chunk.num_rows, 1), score_rows):
        yield chunk.slice(start, score_rows).to_pandas()


def write_scored(chunks: Iterable[pa.Table | pd.DataFrame], cfg: PipelineConfig,
                 predict: Callable[[pd.DataFrame], np.ndarray | pd.DataFrame], model_version: str,
                 path: str | Path, *, score_rows: int = SCORE_ROWS, traced_read: bool = False) -> ScoredFile:
    """Score every chunk (``prediction_rows``) into the Parquet file ``path``, ``score_rows`` rows at a time; what
    it holds at once is one chunk and one slice's predictions. A holdout of no chunk at all is a ValueError."""
    from mlassets.core.data.batches import TableWriter

    if score_rows < 1:
        raise ValueError(f"score_rows must be at least 1, got {score_rows}")
    writer, errors, chunks = TableWriter(path), _Errors(cfg), iter(chunks)
    while True:
        if traced_read:
            with _TRACER.start_as_current_span("read"):
                chunk = next(chunks, _END)
        else:
            chunk = next(chunks, _END)
        if chunk is _END:
            break
        for rows in _slices(chunk, score_rows):
            out = prediction_rows(rows, cfg, predict, model_version)
            del rows
            errors.add(out)
            with _TRACER.start_as_current_span("write", attributes={"rows": len(out)}):
                writer.write(out)
            del out
        del chunk  # before the next one is read
    if writer.schema is None:
        raise ValueError(f"predictions: the holdout of dataset {cfg.dataset.name!r} has no rows to score")
    writer.close()
    return errors.result()
