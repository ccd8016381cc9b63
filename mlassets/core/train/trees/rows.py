"""The boosted trees' one input reader: every split is read in windows of rows through ``SplitRows``, whose one
window is the whole split when it fits (``training.loader: memory``).

``stream.scan`` fits the preprocessing in one pass over the training split (as for the networks). Each split is then
read forward from its Parquet file, ``training.stream_window_rows`` rows at a time, through that preprocessing into a
float64 matrix of just those rows (category codes, then standardized numerics: ``common.matrix``). LightGBM
reads a split as a ``lightgbm.Sequence`` (``SplitRows``: its sampled rows for the bin bounds, then every row pushed in
file order; the validation split binned by the training split's bounds), XGBoost as a ``DataIter`` over
``SplitRows.batches`` into a ``QuantileDMatrix`` (the validation one quantized by the training one's cuts). The
targets are read from their column alone: the training ones as LightGBM's labels, the validation ones for the
validation metric of every round. Every read is in file order, so a run's numbers are a function of the files and
the config (the window is part of the resume key), whatever the machine's memory. Neither split is held as frames or
as a float matrix; what grows with the rows is the libraries' own state (their binned copy, about a byte a value;
labels, scores, gradients), the validation targets and the training scores LightGBM's checkpoint carries.

A window that holds the whole split is read once and kept while the library reads it (its sampled rows, then its
pushes; XGBoost's two passes). With ``training.loader: memory`` the scan keeps the training rows it decoded and the
preprocessing and target scaling are fitted on them at once, as ``read_splits`` fits them (exact means, standard
deviations and median, not merged summaries): measured on the synthetic, demo, orders and penguins splits, the
libraries give the models, curves and bundles the in-memory matrices gave, byte for byte. A tuning trial's splits,
already in memory (``Splits``), are the same one window (``one_window``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.reporting import Reporter
from mlassets.core.train.split_stream import StreamData, frames, scan
from mlassets.core.train.splits import Splits, target_scaling
from mlassets.core.train.trees.common import matrix

Batch = tuple[np.ndarray, np.ndarray]  # rows as one float64 matrix, their targets
Reader = Callable[[], Iterator[Batch]]  # a split's batches, in file order, from its start


@dataclass
class TreeSplits:
    """What the trees' loop, engines and outputs read of the splits: the fitted preprocessing and target scaling, the
    classes, the counts, the validation targets; the rows themselves through ``rows``, read when asked (an engine
    lets them go once its library holds them)."""

    task: str
    pre: Preprocessor
    center: float
    scale: float
    classes: list[str]
    n_train: int
    n_val: int
    y_val: np.ndarray  # float64 target units or 0/1; int64 class index (as ``Splits.y_val``)
    window: int  # rows a read holds at most
    readers: dict[str, tuple[Reader, Callable[[], np.ndarray], str]]  # per split: batches, targets alone, where

    def rows(self, split: str) -> SplitRows:
        """``train`` (targets as the loss wants them) or ``validation`` (as the metric compares them)."""
        batches, targets, where = self.readers[split]
        return SplitRows(batches, targets, self.n_train if split == "train" else self.n_val, self.window, where)


def read_tree_splits(cfg: PipelineConfig, train_path: str, validation_path: str,
                     reporter: Reporter | None) -> TreeSplits:
    """The splits scanned, then read a window of ``training.stream_window_rows`` rows at a time (``stream``) or in
    one window (``memory``: the training rows the scan kept, fitted at once; the validation file read whole)."""
    memory = cfg.training.loader != "stream"
    data = scan(cfg, train_path, validation_path, reporter, keep=memory)
    columns, window = data.columns(), cfg.training.stream_window_rows
    kept = _fit_kept(data) if memory else None

    def read(path: str, loss: bool) -> Reader:
        def batches() -> Iterator[Batch]:
            nonlocal kept
            if loss and kept is not None:  # the scan's decoded rows, taken once (a second read is from the file)
                frame, kept = kept, None
                yield _batch(data, frame, loss)
            elif memory:
                yield _batch(data, pd.read_parquet(path, columns=columns), loss)
            else:
                for frame in frames(path, columns, window):
                    yield _batch(data, frame, loss)
        return batches

    y_val = data.target_values(validation_path, loss=False)
    readers = {"train": (read(train_path, True), lambda: data.target_values(train_path, loss=True), train_path),
               "validation": (read(validation_path, False), lambda: y_val, validation_path)}
    return TreeSplits(cfg.dataset.task, data.pre, data.center, data.scale, list(data.classes), data.n_train,
                      len(y_val), y_val, max(data.n_train, len(y_val)) if memory else window, readers)


def one_window(splits: Splits) -> TreeSplits:
    """Splits already in memory (a tuning trial's) as the reader's one window."""
    readers = {"train": (lambda: iter([(matrix(splits.x_cat, splits.x_num), splits.y)]), lambda: splits.y,
                         "training split"),
               "validation": (lambda: iter([(matrix(splits.val_cat, splits.val_num), splits.y_val)]),
                              lambda: splits.y_val, "validation split")}
    return TreeSplits(splits.task, splits.pre, splits.center, splits.scale, list(splits.classes), splits.n_train,
                      splits.n_val, splits.y_val, max(splits.n_train, splits.n_val), readers)


def _batch(data: StreamData, frame: pd.DataFrame, loss: bool) -> Batch:
    x_cat, x_num, y = data.arrays(frame, loss=loss)
    return matrix(x_cat, x_num), y


def _fit_kept(data: StreamData) -> pd.DataFrame:
    """The training rows the scan kept, as one frame; the preprocessing and the target scaling fitted on them at
    once (``read_splits``' numbers) in place of the scan's merged summaries."""
    parts = [frame for group in sorted(data.decoded) for frame in data.decoded.pop(group)]
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
    data.pre = Preprocessor.fit(frame, data.pre.categorical, data.pre.numeric)
    if data.cfg.dataset.task == "regression":
        data.center, data.scale = target_scaling(frame[data.cfg.dataset.target].to_numpy(dtype=np.float64))
    return frame


class SplitRows:
    """One split's rows with a target, read forward ``batch_size`` at a time: ``len``, a row (``rows[i]``) and a range
    (``rows[a:b]``) as float64 (LightGBM's ``Sequence``: it reads its sampled rows in order, then every range in
    order), ``batches()`` (XGBoost's ``DataIter``) and ``labels()``. Reading backwards starts the file again, but a
    split that fits in one window is read once and kept (``batch_size`` its rows)."""

    def __init__(self, read: Reader, targets: Callable[[], np.ndarray], n: int, batch_size: int,
                 where: str = "split") -> None:
        self.read, self.targets, self.n, self.where = read, targets, n, where
        self.batch_size = max(min(batch_size, n), 1)
        self._kept: list[Batch] | None = None  # the one window's reads
        self._open()

    def __len__(self) -> int:
        return self.n

    def one_window(self) -> bool:
        return self.batch_size >= self.n

    def batches(self) -> Iterator[Batch]:
        """(rows as one float64 matrix, their targets) per read, in file order."""
        if not self.one_window():
            yield from ((x, y) for x, y in self.read() if len(y))
            return
        if self._kept is None:
            self._kept = [(x, y) for x, y in self.read() if len(y)]
        yield from self._kept

    def labels(self) -> np.ndarray:
        """The split's targets: the one window's, else read from their column alone."""
        if not self.one_window():
            return self.targets()
        ys = [y for _, y in self.batches()]
        return ys[0] if len(ys) == 1 else np.concatenate(ys)

    def _open(self) -> None:
        self._reader = self.batches()
        self._start, self._x = 0, np.empty((0, 0))

    def __getitem__(self, index: int | slice) -> np.ndarray:
        if isinstance(index, slice):
            if index.step not in (None, 1):
                raise TypeError(f"rows of a streamed split are read in order, not by step {index.step}")
            start, stop = index.start or 0, min(self.n if index.stop is None else index.stop, self.n)
        else:
            start, stop = int(index), int(index) + 1
            if not 0 <= start < self.n:
                raise IndexError(f"row {start} of a split of {self.n} rows")
        if start < self._start:
            self._open()
        parts = []
        while start < stop:
            end = self._start + len(self._x)
            if start >= end:
                batch = next(self._reader, None)
                if batch is None:
                    raise ValueError(f"{self.where}: fewer than the {self.n} rows with a target it held when it was "
                                     "scanned (was it rewritten during training?)")
                self._start, self._x = end, batch[0]
                continue
            part = self._x[start - self._start:min(stop, end) - self._start]
            parts.append(part)
            start += len(part)
        if not isinstance(index, slice):
            return parts[0][0]
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else self._x[:0]
