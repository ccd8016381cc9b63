"""Training data for the torch loop: the splits as the loader's sources, and the loader (``global_batches.Batches``).

``training.loader`` says how much of the training split the loader holds: ``stream`` a window of about
``training.stream_window_rows`` rows of its row groups, ``memory`` (the default) one window of the whole split,
decoded once. Either way it is the same reader (``stream.scan``) and the same loader; ``TabularData`` (splits already
in memory as tensors: a tuning trial's, a benchmark's) is the loader's one-group source.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import torch

from mlassets.core.config import PipelineConfig, TrainingConfig
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.faults import Faults
from mlassets.core.train.feature_spec import FeatureSpec
from mlassets.core.train.reporting import Reporter
from mlassets.core.train.split_stream import StreamData, scan
from mlassets.core.train.splits import Splits, read_splits
from mlassets.core.train.torch_run.global_batches import Batches

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
M_ARENA_MAX = -8  # glibc mallopt(3)


@dataclass
class TabularData:
    """The splits (``Splits``) as tensors for the torch loop; targets as the loss wants them."""

    pre: Preprocessor
    x_cat: torch.Tensor
    x_num: torch.Tensor
    y: torch.Tensor
    val_cat: torch.Tensor
    val_num: torch.Tensor
    y_val: np.ndarray  # target units or 0/1 (float64), class indices (int64)
    center: float
    scale: float
    n_train: int
    n_val: int
    classes: list[str] = field(default_factory=list)
    spec: FeatureSpec | None = None

    @property
    def group_rows(self) -> list[int]:
        return [self.n_train]  # one group: the loader's one window, already in memory

    def read_groups(self, groups: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.x_cat.numpy(), self.x_num.numpy(), self.y.numpy()

    def validation_chunks(self, rows: int) -> Iterator[tuple[torch.Tensor, torch.Tensor, np.ndarray]]:
        for s in range(0, self.n_val, rows):
            yield self.val_cat[s:s + rows], self.val_num[s:s + rows], self.y_val[s:s + rows]


def load_data(cfg: PipelineConfig, train_path: str, validation_path: str, reporter: Reporter | None) -> TabularData:
    """``read_splits`` as tensors (no copies: the arrays are shared)."""
    return as_tensors(read_splits(cfg, train_path, validation_path, reporter))


def as_tensors(s: Splits) -> TabularData:
    """The splits as the torch loop's tensors."""
    t = torch.from_numpy
    return TabularData(s.pre, t(s.x_cat), t(s.x_num), t(s.y), t(s.val_cat), t(s.val_num), s.y_val, s.center,
                       s.scale, s.n_train, s.n_val, list(s.classes), s.spec)


def window_rows(tr: TrainingConfig) -> int:
    """The loader's window: ``stream_window_rows`` when streaming, else 0 (the whole split)."""
    return tr.stream_window_rows if tr.loader == "stream" else 0


def build_loader(data: TabularData | StreamData, faults: Faults, tr: TrainingConfig, rank: int,
                 world_size: int) -> Batches:
    """The loop's loader (also its sampler: it counts the epoch's global batches); the loop decodes its first window
    (``Batches.preload``) once it has resumed, before its first step."""
    return Batches(data, faults, tr.batch_size, rank, world_size, tr.seed, window_rows(tr), tr.epochs)


def bound_allocators() -> None:
    """Make a torch training process's memory follow its windows, not its rows: ``global_batches.Batches`` decodes a
    window in its reader thread and the loop frees it in its own. Arrow allocates from the system
    allocator (its default pool, mimalloc, kept what such frees gave back), and glibc keeps two malloc arenas, not
    one per thread (each thread's arena held freed windows). One epoch's peak at 20M rows was 0.60-0.68 GiB from run
    to run against 0.57 at 5M; with both bounds 0.53 GiB at either size, and the same samples/s (``bench
    stream_loader``, 2 cores). The boosted trees' streaming path is left as it was."""
    pa.set_memory_pool(pa.system_memory_pool())
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):  # not glibc (musl): its own allocator, left as it is
            ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, 2)


def load_training_data(cfg: PipelineConfig, train_path: str, validation_path: str,
                       reporter: Reporter | None) -> StreamData:
    """The splits scanned (``stream.scan``); streamed (``training.loader: stream``) with the process's allocators
    bounded first (``bound_allocators``), or kept once read (``memory``)."""
    if cfg.training.loader == "stream":
        bound_allocators()
    return scan(cfg, train_path, validation_path, reporter, keep=cfg.training.loader != "stream")
