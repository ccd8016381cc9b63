"""Training data: parquet splits to tensors, and a data loader whose position is part of the checkpoint.

Every rank sees the same global batches (a permutation seeded by ``seed + epoch``) and takes its own
contiguous slice of each, so 1 and N ranks with the same global batch follow the same trajectory.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import torch
from torchdata.stateful_dataloader import StatefulDataLoader

from mlassets.core.config import PipelineConfig
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.faults import Faults
from mlassets.core.train.reporting import Reporter

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass
class TabularData:
    """Fitted preprocessing and the tensors of both splits; targets are standardized for training."""

    pre: Preprocessor
    x_cat: torch.Tensor
    x_num: torch.Tensor
    y: torch.Tensor
    val_cat: torch.Tensor
    val_num: torch.Tensor
    y_val: np.ndarray  # target units, float64
    center: float
    scale: float
    n_train: int
    n_val: int


def _read(path: str, columns: list[str], what: str) -> pd.DataFrame:
    """Read only the needed columns, naming any that the file lacks."""
    if not Path(path).is_file():
        raise ValueError(f"{what} data {path!r} does not exist")
    have = set(pq.read_schema(path).names)
    for column in columns:
        if column not in have:
            raise ValueError(f"{what} data {path}: missing column {column!r}")
    return pd.read_parquet(path, columns=columns)


def load_data(cfg: PipelineConfig, train_path: str, validation_path: str, reporter: Reporter | None) -> TabularData:
    """Read both splits, drop rows without a target, fit the preprocessing on the training rows."""
    feats, target = cfg.features, cfg.dataset.target
    columns = list(dict.fromkeys([*feats.categorical, *feats.numeric, target]))
    frames = {}
    for what, path in (("training", train_path), ("validation", validation_path)):
        df = _read(path, columns, what)
        missing = int(df[target].isna().sum())
        if missing and reporter is not None:
            reporter.log(f"{what}: dropping {missing} rows without a {target!r} value")
        if len(df) - missing == 0:
            raise ValueError(f"{what} data is empty: no rows with a {target!r} value")
        frames[what] = df[df[target].notna()].reset_index(drop=True)
    train_df, val_df = frames["training"], frames["validation"]
    pre = Preprocessor.fit(train_df, feats.categorical, feats.numeric)
    xc, xn = pre.transform(train_df)
    vc, vn = pre.transform(val_df)
    y_train = train_df[target].to_numpy(dtype=np.float64)
    if cfg.dataset.task == "binary":  # the network gives logits of P(target = 1): no standardizing
        for what, df in frames.items():
            _check_binary(df[target].to_numpy(dtype=np.float64), target, what)
        center, scale = 0.0, 1.0
    else:
        center = float(np.median(y_train))
        scale = float(np.std(y_train))
        scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    y = torch.from_numpy(((y_train - center) / scale).astype(np.float32))
    return TabularData(pre, xc, xn, y, vc, vn, val_df[target].to_numpy(dtype=np.float64), center, scale,
                       len(train_df), len(val_df))


def _check_binary(y: np.ndarray, target: str, what: str) -> None:
    bad = np.flatnonzero((y != 0) & (y != 1))
    if len(bad):
        raise ValueError(f"dataset.target {target!r} of a binary task must be 0 or 1: {what} row {int(bad[0])} "
                         f"has {float(y[bad[0]])!r} ({len(bad)} such rows)")


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


def build_loader(data: TabularData, faults: Faults, global_batch: int, rank: int, world_size: int,
                 seed: int) -> tuple[StatefulDataLoader, ShardedBatchSampler]:
    """A single-process ``StatefulDataLoader``; it draws nothing from the global RNG (own generator)."""
    sampler = ShardedBatchSampler(data.n_train, global_batch, rank, world_size, seed)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="'set_vital' is deprecated")  # raised inside torchdata
        loader = StatefulDataLoader(TabularRows(data, faults), batch_sampler=sampler, collate_fn=_identity,
                                    num_workers=0, generator=torch.Generator().manual_seed(seed))
    return loader, sampler
