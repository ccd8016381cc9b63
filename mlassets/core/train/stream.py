"""Training input that never holds a split in memory (``training.loader: stream``).

One pass over the training split's Parquet row groups fits the preprocessing (vocabularies; numeric means and
standard deviations from sums; the target's median and spread from mergeable quantile summaries) and counts the rows.
Then every epoch reads the row groups in an order seeded by ``(seed, epoch)``, a window of them at a time (about
``training.stream_window_rows`` rows: the memory bound), and shuffles each window by ``(seed, epoch, window)``. Global
batches are cut from that stream, and each rank takes its contiguous share of each, as the in-memory loader does, so
1 and N ranks follow one trajectory. The checkpoint holds ``(epoch, batch position)``; a resumed run reads the window
that position falls in again, shuffles it the same way and goes on from the same row: exact resume.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mlassets.core.config import PipelineConfig
from mlassets.core.data.summary import TargetStats
from mlassets.core.features.preprocess import Preprocessor, category_key, numeric_values
from mlassets.core.train.faults import Faults
from mlassets.core.train.reporting import Reporter
from mlassets.core.train.spec import FeatureSpec, output_size
from mlassets.core.train.splits import _check_binary, class_label

if TYPE_CHECKING:  # the boosted trees read this module too: torch only where a tensor is made
    import torch

M_ARENA_MAX = -8  # glibc mallopt(3)


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

    def validation_chunks(self, rows: int) -> Iterator[tuple[torch.Tensor, torch.Tensor, np.ndarray]]:
        """The validation split in chunks: inputs as tensors, the target as the validation metric compares it."""
        import torch

        for frame in frames(self.validation_path, self.columns(), rows):
            x_cat, x_num, y = self.arrays(frame, loss=False)
            yield torch.from_numpy(x_cat), torch.from_numpy(x_num), y

    def target_parts(self, path: str, loss: bool, rows: int = 65536) -> Iterator[np.ndarray]:
        """A split's targets as ``arrays`` gives them, read from its target column alone, ``rows`` at a time."""
        for frame in frames(path, [self.cfg.dataset.target], rows):
            yield self.targets(frame, loss)[1]

    def target_values(self, path: str, loss: bool) -> np.ndarray:
        """``target_parts`` as one array."""
        parts = list(self.target_parts(path, loss))
        return np.concatenate(parts) if parts else np.empty(0)


def frames(path: str, columns: list[str], rows: int, row_groups: list[int] | None = None) -> Iterator[pd.DataFrame]:
    """A Parquet file's rows as frames of at most ``rows``, decoded a page at a time (no row group is held whole)."""
    file = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    for batch in file.iter_batches(batch_size=rows, row_groups=row_groups, columns=columns):
        yield batch.to_pandas()


def bound_allocators() -> None:
    """Make a torch training process's memory follow its windows, not its rows: ``StreamBatches`` decodes and
    shuffles a window in its reader thread and the loop frees it in its own. Arrow allocates from the system
    allocator (its default pool, mimalloc, kept what such frees gave back), and glibc keeps two malloc arenas, not
    one per thread (each thread's arena held freed windows). One epoch's peak at 20M rows was 0.60-0.68 GiB from run
    to run against 0.57 at 5M; with both bounds 0.53 GiB at either size, and the same samples/s (``bench
    stream_loader``, 2 cores). The boosted trees' streaming path is left as it was."""
    pa.set_memory_pool(pa.system_memory_pool())
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):  # not glibc (musl): its own allocator, left as it is
            ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, 2)


def scan(cfg: PipelineConfig, train_path: str, validation_path: str, reporter: Reporter | None) -> StreamData:
    """One pass over the training split (and a count of the validation one): the preprocessing, fitted as
    ``Preprocessor.fit`` does but from sums and sets, and the target's scaling."""
    feats, target, task = cfg.features, cfg.dataset.target, cfg.dataset.task
    vocab: dict[str, set[str]] = {c: set() for c in feats.categorical}
    sums = {c: np.zeros(3) for c in feats.numeric}  # count, sum, sum of squares of the finite values
    stats, classes, group_rows, dropped = [], set(), [], 0
    columns = list(dict.fromkeys([*feats.categorical, *feats.numeric, target]))
    for group in range(pq.ParquetFile(train_path).num_row_groups):
        group_rows.append(0)
        targets = []  # a row group's targets: its quantile summary is one of the merged ones
        for frame in frames(train_path, columns, cfg.training.stream_window_rows, [group]):
            dropped += int(frame[target].isna().sum())
            frame = frame[frame[target].notna()]
            group_rows[-1] += len(frame)
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
                _check_binary(frame[target].to_numpy(dtype=np.float64), target, "training")
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
    data = StreamData(cfg, pre, train_path, validation_path, group_rows, n_val=0, classes=sorted(classes))
    if task == "regression":
        merged = TargetStats.merge(stats)
        data.center = merged.quantile(0.5)
        spread = merged.std * math.sqrt((merged.count - 1) / merged.count) if merged.count > 1 else math.nan
        data.scale = spread if math.isfinite(spread) and spread > 0 else 1.0
    if task == "multiclass" and len(data.classes) < 2:
        raise ValueError(f"dataset.target {target!r} of a multiclass task has {len(data.classes)} class in the "
                         "training split; it needs at least 2")
    data.n_val = sum(len(part) for part in data.target_parts(validation_path, loss=False))  # counted, not kept
    if not data.n_val:
        raise ValueError(f"validation data is empty: no rows with a {target!r} value")
    return data


class StreamBatches:
    """This rank's share of each global batch of an epoch, read as described above; it is both the loader and the
    sampler of the loop (``position`` counts global batches; ``state_dict`` is the position)."""

    def __init__(self, data: StreamData, faults: Faults, global_batch: int, rank: int, world_size: int, seed: int,
                 window_rows: int) -> None:
        self.data, self.faults, self.window_rows = data, faults, window_rows
        self.n, self.global_batch, self.rank, self.world_size, self.seed = (data.n_train, global_batch, rank,
                                                                          world_size, seed)
        self.epoch, self.position = 1, 0
        self._file = pq.ParquetFile(data.train_path)

    def __len__(self) -> int:
        return -(-self.n // self.global_batch)

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.position = epoch, 0

    def global_size(self, batch: int) -> int:
        return min(self.global_batch, self.n - batch * self.global_batch)

    def windows(self) -> list[list[int]]:
        """This epoch's row groups in seeded order, cut into windows of at least ``window_rows`` rows."""
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.data.group_rows))
        out, current, rows = [], [], 0
        for group in order.tolist():
            current.append(group)
            rows += self.data.group_rows[group]
            if rows >= self.window_rows:
                out.append(current)
                current, rows = [], 0
        return out + ([current] if current else [])

    def _window(self, index: int, groups: list[int]) -> tuple[np.ndarray, ...]:
        frames = [self._file.read_row_group(g, columns=self.data.columns()).to_pandas() for g in groups]
        arrays = self.data.arrays(pd.concat(frames, ignore_index=True))
        order = np.random.default_rng([self.seed, self.epoch, index]).permutation(len(arrays[2]))
        return tuple(a[order] for a in arrays)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        import torch

        windows = self.windows()
        sizes = [sum(self.data.group_rows[g] for g in w) for w in windows]
        w, offset = 0, self.position * self.global_batch
        while w < len(windows) and offset >= sizes[w]:  # the window the position falls in
            offset -= sizes[w]
            w += 1
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stream-window") as pool:
            ahead = pool.submit(self._window, w, windows[w]) if w < len(windows) else None
            buffer: tuple[np.ndarray, ...] | None = None
            for batch in range(self.position, len(self)):
                need, parts = self.global_size(batch), []
                while need:
                    if buffer is None or not len(buffer[0]):
                        buffer = tuple(a[offset:] for a in ahead.result())
                        w, offset = w + 1, 0
                        # the next window is read and shuffled while this one trains (a core the loop leaves idle)
                        ahead = pool.submit(self._window, w, windows[w]) if w < len(windows) else None
                    take = min(need, len(buffer[0]))
                    parts.append(tuple(a[:take] for a in buffer))
                    buffer = tuple(a[take:] for a in buffer)
                    need -= take
                rows = [np.concatenate([p[i] for p in parts]) if len(parts) > 1 else parts[0][i] for i in range(3)]
                share = np.array_split(np.arange(len(rows[2])), self.world_size)[self.rank]
                self.faults.slow_loader()
                self.position = batch + 1
                lo, hi = (int(share[0]), int(share[-1]) + 1) if len(share) else (0, 0)
                yield tuple(torch.from_numpy(np.ascontiguousarray(r[lo:hi])) for r in rows)

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if int(state["seed"]) != self.seed:
            raise ValueError(f"data loader state: seed {state['seed']} != {self.seed}")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
