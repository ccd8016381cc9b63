"""The training input of the torch families and of the boosted trees: the splits read from their Parquet files, never
more of them at once than the loader's window (``global_batches.Batches``; the trees' ``trees.rows.SplitRows``).

One pass over the training split's Parquet row groups fits the preprocessing (vocabularies; numeric means and
standard deviations from sums; the target's median and spread from mergeable quantile summaries, exact when the split
is one row group) and counts the rows; the validation split is counted (and checked) from its target column. With
``training.loader: memory`` the loader's window is the whole split, decoded once and kept, and the validation split's
chunks are kept after their first read: the same code, one window. (The boosted trees fit their one window's
preprocessing again at once from the kept rows: ``trees.rows``.)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mlassets.core.config import PipelineConfig
from mlassets.core.data.summary import TargetStats
from mlassets.core.features.preprocess import Preprocessor, category_key, numeric_values
from mlassets.core.train.feature_spec import FeatureSpec, output_size
from mlassets.core.train.reporting import Reporter
from mlassets.core.train.splits import check_binary, check_split, class_label

if TYPE_CHECKING:  # the boosted trees read this module too: torch only where a tensor is made
    import torch

@dataclass
class StreamData:
    """What the loop needs of the splits, without their rows: fitted preprocessing, target scaling, row counts."""

    cfg: PipelineConfig
    pre: Preprocessor
    train_path: str
    validation_path: str
    group_rows: list[int]  # rows with a target, per training row group
    n_val: int
    center: float = 0.0
    scale: float = 1.0
    classes: list[str] = field(default_factory=list)
    keep: bool = False  # the validation chunks are kept after their first read (training.loader: memory)
    _kept: list[tuple[torch.Tensor, torch.Tensor, np.ndarray]] | None = field(default=None, repr=False)
    decoded: dict[int, list[pd.DataFrame]] = field(default_factory=dict, repr=False)  # row groups the scan kept

    @property
    def n_train(self) -> int:
        return sum(self.group_rows)

    @property
    def spec(self) -> FeatureSpec:
        task = self.cfg.dataset.task
        return FeatureSpec(self.pre.cardinalities, len(self.pre.numeric), output_size(task, self.classes), task,
                           dict(self.cfg.model.params))

    def columns(self) -> list[str]:
        feats = self.cfg.features
        return list(dict.fromkeys([*feats.categorical, *feats.numeric, self.cfg.dataset.target]))

    def arrays(self, frame: pd.DataFrame, loss: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows with a target as (category codes, numerics, target): the target as the loss wants it, or (``loss``
        false) as the validation metric compares it (target units or 0/1 in float64; class indices)."""
        frame, y = self.targets(frame, loss)
        x_cat, x_num = self.pre.transform(frame)
        return x_cat, x_num, y

    def targets(self, frame: pd.DataFrame, loss: bool = True) -> tuple[pd.DataFrame, np.ndarray]:
        """The rows ``arrays`` keeps and their target as it gives it (a frame of the target column alone will do)."""
        target, task = self.cfg.dataset.target, self.cfg.dataset.task
        frame = frame[frame[target].notna()]
        if task == "multiclass":
            index = {c: i for i, c in enumerate(self.classes)}
            labels = frame[target].map(class_label)
            frame, labels = frame[labels.isin(index).to_numpy()], labels[labels.isin(index).to_numpy()]
            y = labels.map(index).to_numpy(dtype=np.int64)
        else:
            y = frame[target].to_numpy(dtype=np.float64)
            if loss:
                y = ((y - self.center) / self.scale).astype(np.float32)
        return frame, y

    def read_groups(self, groups: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Training row groups ``groups`` as ``arrays`` gives them (the loader's window); a group the scan kept is
        taken from it (and let go), each run of the others read from the file as one Arrow table, converted once."""
        schema = pq.read_schema(self.train_path)
        strings = [c for c in self.cfg.features.categorical  # read as dictionaries: codes, no Python string a row
                   if c != self.cfg.dataset.target and schema.field(c).type in (pa.string(), pa.large_string())]
        file, parts, tables = pq.ParquetFile(self.train_path, read_dictionary=strings), [], []
        for g in groups:
            kept = self.decoded.pop(g, None)
            if kept is None:
                tables.append(file.read_row_group(g, columns=self.columns()))
            else:
                parts, tables = [*parts, *joined(tables), *kept], []
        parts += joined(tables)
        return self.arrays(pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0])

    def validation_chunks(self, rows: int) -> Iterator[tuple[torch.Tensor, torch.Tensor, np.ndarray]]:
        """The validation split in chunks: inputs as tensors, the target as the validation metric compares it."""
        if self._kept is not None:
            yield from self._kept
            return
        import torch

        kept = []
        for frame in frames(self.validation_path, self.columns(), rows):
            x_cat, x_num, y = self.arrays(frame, loss=False)
            chunk = torch.from_numpy(x_cat), torch.from_numpy(x_num), y
            if self.keep:
                kept.append(chunk)
            yield chunk
        if self.keep:
            self._kept = kept

    def target_parts(self, path: str, loss: bool, rows: int = 65536) -> Iterator[np.ndarray]:
        """A split's targets as ``arrays`` gives them, read from its target column alone, ``rows`` at a time."""
        for frame in frames(path, [self.cfg.dataset.target], rows):
            yield self.targets(frame, loss)[1]

    def target_values(self, path: str, loss: bool) -> np.ndarray:
        """``target_parts`` as one array."""
        parts = list(self.target_parts(path, loss))
        return np.concatenate(parts) if parts else np.empty(0)


def joined(tables: list[pa.Table]) -> list[pd.DataFrame]:
    """Arrow tables as one frame (their dictionaries unified: one set of categories), or none."""
    return [pa.concat_tables(tables).to_pandas()] if tables else []


def frames(path: str, columns: list[str], rows: int, row_groups: list[int] | None = None) -> Iterator[pd.DataFrame]:
    """A Parquet file's rows as frames of at most ``rows``, decoded a page at a time (no row group is held whole)."""
    file = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    for batch in file.iter_batches(batch_size=rows, row_groups=row_groups, columns=columns):
        yield batch.to_pandas()


def scan(cfg: PipelineConfig, train_path: str, validation_path: str, reporter: Reporter | None,
         keep: bool = False) -> StreamData:
    """One pass over the training split (and a count of the validation one): the preprocessing, fitted as
    ``Preprocessor.fit`` does but from sums and sets, and the target's scaling. ``keep`` (the whole split is the
    loader's one window): the decoded row groups are kept for that window (read once) and the validation chunks
    after their first read."""
    feats, target, task = cfg.features, cfg.dataset.target, cfg.dataset.task
    vocab: dict[str, set[str]] = {c: set() for c in feats.categorical}
    sums = {c: np.zeros(3) for c in feats.numeric}  # count, sum, sum of squares of the finite values
    stats, classes, group_rows, dropped, decoded = [], set(), [], 0, []
    columns = list(dict.fromkeys([*feats.categorical, *feats.numeric, target]))
    check_split(train_path, columns, "training")
    check_split(validation_path, columns, "validation")
    for group in range(pq.ParquetFile(train_path).num_row_groups):
        group_rows.append(0)
        decoded.append([])
        targets = []  # a row group's targets: its quantile summary is one of the merged ones
        for frame in frames(train_path, columns, cfg.training.stream_window_rows, [group]):
            dropped += int(frame[target].isna().sum())
            frame = frame[frame[target].notna()]
            offset = sum(group_rows)
            group_rows[-1] += len(frame)
            if keep:
                decoded[-1].append(frame)
            for column in feats.categorical:
                _, uniques = pd.factorize(frame[column], use_na_sentinel=True)
                vocab[column].update(category_key(u) for u in uniques)
            for column in feats.numeric:
                values = numeric_values(frame[column], column)
                finite = values[~np.isnan(values)]
                sums[column] += (finite.size, finite.sum(), np.square(finite).sum())
            if task == "multiclass":
                classes.update(frame[target].map(class_label))
            elif task == "binary":
                check_binary(frame[target].to_numpy(dtype=np.float64), target, "training", offset)
            else:
                targets.append(frame[target])
        if targets:
            stats.append(TargetStats.of_values(pd.concat(targets, ignore_index=True)))
    if dropped and reporter is not None:
        reporter.log(f"training: dropping {dropped} rows without a {target!r} value")
    if not sum(group_rows):
        raise ValueError(f"training data is empty: no rows with a {target!r} value")
    means = {c: float(s[1] / s[0]) if s[0] else 0.0 for c, s in sums.items()}
    stds = {}
    for column, (n, total, squares) in sums.items():
        std = math.sqrt(max(squares / n - (total / n) ** 2, 0.0)) if n else 1.0
        stds[column] = std if math.isfinite(std) and std > 0 else 1.0
    pre = Preprocessor(list(feats.categorical), list(feats.numeric),
                       {c: {k: i + 1 for i, k in enumerate(sorted(keys))} for c, keys in vocab.items()}, means, stds)
    data = StreamData(cfg, pre, train_path, validation_path, group_rows, n_val=0, classes=sorted(classes), keep=keep)
    if keep:
        data.decoded = {g: parts for g, parts in enumerate(decoded)}
    if task == "regression":
        merged = TargetStats.merge(stats)
        data.center = merged.quantile(0.5)
        spread = merged.std * math.sqrt((merged.count - 1) / merged.count) if merged.count > 1 else math.nan
        data.scale = spread if math.isfinite(spread) and spread > 0 else 1.0
    if task == "multiclass" and len(data.classes) < 2:
        raise ValueError(f"dataset.target {target!r} of a multiclass task has {len(data.classes)} class in the "
                         "training split; it needs at least 2")
    data.n_val = _count_validation(data, reporter)
    return data


def _count_validation(data: StreamData, reporter: Reporter | None) -> int:
    """The validation split's rows that count (counted from its target column, not kept), as ``read_splits`` checks
    and reports them: rows without a target or (multiclass) of a class the training split never holds are dropped,
    a binary target must be 0 or 1."""
    target, task = data.cfg.dataset.target, data.cfg.dataset.task
    rows, missing, unknown, unknown_classes = 0, 0, 0, set()
    for frame in frames(data.validation_path, [target], 65536):
        values = frame[target]
        missing += int(values.isna().sum())
        values = values[values.notna()]
        if task == "binary":
            check_binary(values.to_numpy(dtype=np.float64), target, "validation", rows)
        elif task == "multiclass":
            labels = values.map(class_label)
            known = labels.isin(set(data.classes)).to_numpy()
            unknown += int((~known).sum())
            unknown_classes.update(labels[~known])
        rows += len(values)
    if missing and reporter is not None:
        reporter.log(f"validation: dropping {missing} rows without a {target!r} value")
    if not rows:
        raise ValueError(f"validation data is empty: no rows with a {target!r} value")
    if unknown:  # a class the model cannot predict would make the validation metric infinite
        if reporter is not None:
            reporter.log(f"validation: dropping {unknown} rows of classes the training split never holds "
                         f"({', '.join(sorted(unknown_classes))})")
        if unknown == rows:
            raise ValueError("validation data is empty: no row has a class the training split holds")
    return rows - unknown
