"""Training data for the torch loop: the splits as tensors, and a data loader whose position is part of the checkpoint.

Every rank sees the same global batches (a permutation seeded by ``seed + epoch``) and takes its own
contiguous slice of each, so 1 and N ranks with the same global batch follow the same trajectory.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torchdata.stateful_dataloader import StatefulDataLoader

from mlassets.core.config import PipelineConfig
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.faults import Faults
from mlassets.core.train.reporting import Reporter
from mlassets.core.train.spec import FeatureSpec
from mlassets.core.train.splits import Splits, read_splits
from mlassets.core.train.stream import StreamBatches, StreamData, bound_allocators, scan

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


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


class TabularRows(torch.utils.data.Dataset):
    """Rows of in-memory tensors, fetched a batch at a time (``__getitems__``); the slow-loader fault lives here."""

    def __init__(self, data: TabularData, faults: Faults) -> None:
        self.data = data
        self.faults = faults

    def __len__(self) -> int:
        return self.data.n_train

    def __getitem__(self, index: int) -> Batch:
        return self.__getitems__(torch.tensor([index]))

    def __getitems__(self, indices: torch.Tensor) -> Batch:
        self.faults.slow_loader()
        return self.data.x_cat[indices], self.data.x_num[indices], self.data.y[indices]


class ShardedBatchSampler:
    """Yields this rank's slice of each global batch of an epoch; ``state_dict`` is its position."""

    def __init__(self, n: int, global_batch: int, rank: int, world_size: int, seed: int) -> None:
        self.n, self.global_batch, self.rank, self.world_size, self.seed = n, global_batch, rank, world_size, seed
        self.epoch, self.position = 1, 0

    def __len__(self) -> int:
        return -(-self.n // self.global_batch)

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.position = epoch, 0

    def global_size(self, batch: int) -> int:
        """Number of rows in global batch ``batch`` (the last one may be short)."""
        return min(self.global_batch, self.n - batch * self.global_batch)

    def __iter__(self) -> Iterator[torch.Tensor]:
        perm = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + self.epoch))
        for batch in range(self.position, len(self)):
            rows = perm[batch * self.global_batch:(batch + 1) * self.global_batch]
            self.position = batch + 1
            yield rows.tensor_split(self.world_size)[self.rank]

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if int(state["seed"]) != self.seed:
            raise ValueError(f"data loader state: seed {state['seed']} != {self.seed}")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])


def _identity(batch: Batch) -> Batch:
    return batch


def build_loader(data: TabularData | StreamData, faults: Faults, global_batch: int, rank: int, world_size: int,
                 seed: int, window_rows: int = 0) -> tuple[Any, Any]:
    """``(loader, sampler)``: a single-process ``StatefulDataLoader`` over the tensors (it draws nothing from the
    global RNG: own generator), or for streamed splits their ``StreamBatches`` as both."""
    if isinstance(data, StreamData):
        batches = StreamBatches(data, faults, global_batch, rank, world_size, seed, window_rows)
        return batches, batches
    sampler = ShardedBatchSampler(data.n_train, global_batch, rank, world_size, seed)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="'set_vital' is deprecated")  # raised inside torchdata
        loader = StatefulDataLoader(TabularRows(data, faults), batch_sampler=sampler, collate_fn=_identity,
                                    num_workers=0, generator=torch.Generator().manual_seed(seed))
    return loader, sampler


def load_training_data(cfg: PipelineConfig, train_path: str, validation_path: str,
                       reporter: Reporter | None) -> TabularData | StreamData:
    """The splits as ``training.loader`` says: in memory (tensors), or streamed from their row groups (with the
    process's allocators bounded first: ``stream.bound_allocators``)."""
    if cfg.training.loader == "stream":
        bound_allocators()
        return scan(cfg, train_path, validation_path, reporter)
    return load_data(cfg, train_path, validation_path, reporter)
