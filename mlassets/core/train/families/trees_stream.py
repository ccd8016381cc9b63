"""The boosted trees' input when the splits are streamed (``training.loader: stream``): neither split is ever held as
frames or as a float matrix. What grows with the rows is the libraries' own state (their binned copy, about a byte a
value; labels, scores, gradients), the validation targets and the training scores LightGBM's checkpoint carries (8
bytes a row and class).

``stream.scan`` fits the preprocessing in one pass over the training split (as for the networks). Each split is then
read forward from its Parquet file, ``training.stream_window_rows`` rows at a time, through that preprocessing into a
float64 matrix of just those rows (category codes, then standardized numerics: ``trees_common.matrix``). LightGBM
reads a split as a ``lightgbm.Sequence`` (``SplitRows``: its sampled rows for the bin bounds, then every row pushed in
file order; the validation split binned by the training split's bounds), XGBoost as a ``DataIter`` over
``SplitRows.batches`` into a ``QuantileDMatrix`` (the validation one quantized by the training one's cuts). The
targets are read from their column alone: the training ones as LightGBM's labels, the validation ones for the
validation metric of every round. Every read is in file order, so a run's numbers are a function of the files and
the config (the window is part of the resume key), whatever the machine's memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from mlassets.core.config import PipelineConfig
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.families.trees_common import matrix
from mlassets.core.train.reporting import Reporter
from mlassets.core.train.splits import Splits, read_splits
from mlassets.core.train.stream import StreamData, frames, scan


@dataclass
class StreamedSplits:
    """What the trees' loop and outputs read of ``Splits``, without the rows: the fitted preprocessing and target
    scaling, the counts, the validation targets; the rows themselves through ``rows``."""

    data: StreamData
    y_val: np.ndarray  # float64 target units or 0/1; int64 class index (as ``Splits.y_val``)
    batch_rows: int

    @property
    def task(self) -> str:
        return self.data.cfg.dataset.task

    @property
    def pre(self) -> Preprocessor:
        return self.data.pre

    @property
    def center(self) -> float:
        return self.data.center

    @property
    def scale(self) -> float:
        return self.data.scale

    @property
    def classes(self) -> list[str]:
        return self.data.classes

    @property
    def n_train(self) -> int:
        return self.data.n_train

    @property
    def n_val(self) -> int:
        return self.data.n_val

    def rows(self, split: str) -> SplitRows:
        """``train`` (targets as the loss wants them) or ``validation`` (as the metric compares them)."""
        if split == "train":
            return SplitRows(self.data, self.data.train_path, self.n_train, self.batch_rows, loss=True)
        return SplitRows(self.data, self.data.validation_path, self.n_val, self.batch_rows, loss=False)

    def labels(self) -> np.ndarray:
        """The training targets as the loss wants them (standardized float32, 0/1 float32, class indices)."""
        return self.data.target_values(self.data.train_path, loss=True)


TreeSplits = Splits | StreamedSplits


def read_tree_splits(cfg: PipelineConfig, train_path: str, validation_path: str,
                     reporter: Reporter | None) -> TreeSplits:
    """The splits as ``training.loader`` says: in memory (``Splits``), or streamed."""
    if cfg.training.loader != "stream":
        return read_splits(cfg, train_path, validation_path, reporter)
    data = scan(cfg, train_path, validation_path, reporter)
    return StreamedSplits(data, data.target_values(validation_path, loss=False), cfg.training.stream_window_rows)


class SplitRows:
    """One split's rows with a target, read forward ``batch_size`` at a time: ``len``, a row (``rows[i]``) and a range
    (``rows[a:b]``) as float64 (LightGBM's ``Sequence``: it reads its sampled rows in order, then every range in
    order), and ``batches()`` (XGBoost's ``DataIter``). Reading backwards starts the file again."""

    def __init__(self, data: StreamData, path: str, n: int, batch_size: int, loss: bool) -> None:
        self.data, self.path, self.n, self.batch_size, self.loss = data, path, n, batch_size, loss
        self._open()

    def __len__(self) -> int:
        return self.n

    def batches(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(rows as one float64 matrix, their targets) per read of the file, in file order."""
        for frame in frames(self.path, self.data.columns(), self.batch_size):
            x_cat, x_num, y = self.data.arrays(frame, loss=self.loss)
            if len(y):
                yield matrix(x_cat, x_num), y

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
                    raise ValueError(f"{self.path}: fewer than the {self.n} rows with a target it held when it was "
                                     "scanned (was it rewritten during training?)")
                self._start, self._x = end, batch[0]
                continue
            part = self._x[start - self._start:min(stop, end) - self._start]
            parts.append(part)
            start += len(part)
        if not isinstance(index, slice):
            return parts[0][0]
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else self._x[:0]
