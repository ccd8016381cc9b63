"""The streamed loader's windows: read from Parquet as the rows pandas reads, string categories as Arrow dictionaries;
decoded on a reader thread (the first before the first step, the next one, the next epoch's first too, while the
current one trains), never more than two held, the same rows in the same order as a loader that reads each window when
it needs it."""

from __future__ import annotations

import threading
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import torch

from mlassets.core.config import FaultConfig, parse_config
from mlassets.core.train.faults import Faults
from mlassets.core.train.split_stream import scan
from mlassets.core.train.synthetic import flights_like, tiny_config
from mlassets.core.train.torch_run.global_batches import Batches


class Groups:
    """Ten row groups of 100 rows whose target is the row's number; counts the windows decoded and still held."""

    def __init__(self) -> None:
        self.group_rows = [100] * 10
        self.reads: list[tuple[list[int], str]] = []
        self.live, self.most = 0, 0
        self.lock = threading.Lock()

    def read_groups(self, groups: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        y = np.concatenate([np.arange(g * 100, (g + 1) * 100, dtype=np.float32) for g in groups])
        with self.lock:
            self.reads.append((list(groups), threading.current_thread().name))
            self.live += 1
            self.most = max(self.most, self.live)
        weakref.finalize(y, self._freed)
        return np.zeros((len(y), 1), dtype=np.int64), y[:, None].copy(), y

    def _freed(self) -> None:
        with self.lock:
            self.live -= 1


def _loader(source: Groups, tmp_path: Path, epochs: int | None) -> Batches:
    return Batches(source, Faults(FaultConfig(), 0, tmp_path), 64, 0, 1, seed=5, window_rows=250, epochs=epochs)


def _epochs(batches: Batches, source: Groups, n: int) -> tuple[list[np.ndarray], list[int]]:
    """Each epoch's targets in order, and how many windows were decoded when each epoch's last batch was taken."""
    out, reads = [], []
    for epoch in range(1, n + 1):
        batches.set_epoch(epoch)
        if epoch == 1:
            batches.preload()
        ys = []
        for *_, y in batches:
            ys.append(y.numpy())
            if batches.position == len(batches):
                reads.append(len(source.reads))
        out.append(np.concatenate(ys))
    return out, reads


def test_windows_are_read_one_ahead_on_the_reader_thread_across_epochs(tmp_path: Path) -> None:
    ahead, plain = Groups(), Groups()
    loader = _loader(ahead, tmp_path, epochs=2)
    per_epoch = len(loader.windows(1))
    assert per_epoch == 4 and len(loader.windows(2)) == 4
    read, reads = _epochs(loader, ahead, 2)
    assert reads == [per_epoch + 1, 2 * per_epoch]  # the next epoch's first window read while this epoch ended
    assert all(name.startswith("stream-window") for _, name in ahead.reads)  # never in the loop's thread
    assert ahead.most <= 2  # the window in use and the one read ahead
    for epoch, ys in enumerate(read, start=1):
        assert np.array_equal(np.sort(ys), np.arange(1000, dtype=np.float32))  # every row once
        assert [g for g, _ in ahead.reads[(epoch - 1) * per_epoch:epoch * per_epoch]] == loader.windows(epoch)
    unknown, _ = _epochs(_loader(plain, tmp_path, epochs=None), plain, 2)  # no read-ahead past an epoch's end
    assert all(np.array_equal(a, b) for a, b in zip(read, unknown, strict=True))  # the same rows in the same order


def test_a_resumed_position_preloads_its_own_window_and_goes_on_from_the_same_row(tmp_path: Path) -> None:
    source = Groups()
    full, _ = _epochs(_loader(Groups(), tmp_path, epochs=2), Groups(), 2)
    resumed = _loader(source, tmp_path, epochs=2)
    resumed.load_state_dict({"epoch": 2, "position": 7, "seed": 5})  # in epoch 2's second window
    resumed.preload()
    assert [g for g, _ in source.reads] == [resumed.windows(2)[1]]  # that window only, before the first step
    ys = torch.cat([y for *_, y in resumed]).numpy()
    assert np.array_equal(ys, full[1][7 * 64:])
    assert len(source.reads) == 3  # the epoch's last two windows after it; the run ends with epoch 2: none after


def test_a_window_read_with_string_categories_as_dictionaries_is_the_rows_as_pandas_reads_them(tmp_path: Path) -> None:
    frame = flights_like(600, seed=3)
    frame.loc[::7, "carrier"] = None  # a missing category: the unknown index
    frame.loc[::11, "arr_delay"] = np.nan  # a row without a target: dropped
    train, validation = tmp_path / "train.parquet", tmp_path / "validation.parquet"
    frame.to_parquet(train, row_group_size=100)
    flights_like(100, seed=4).to_parquet(validation)
    data = scan(parse_config(tiny_config(loader="stream", stream_window_rows=250)), str(train), str(validation), None)
    groups, file = [4, 0, 5], pq.ParquetFile(train)
    frames = {g: file.read_row_group(g, columns=data.columns()).to_pandas() for g in groups}
    expected = data.arrays(pd.concat([frames[g] for g in groups], ignore_index=True))
    assert (expected[0][:, 0] == 0).any() and len(expected[2]) < 300
    for got, want in zip(data.read_groups(groups), expected, strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    data.decoded = {0: [frames[0]]}  # a group the scan kept, between groups read from the file: the same order
    for got, want in zip(data.read_groups(groups), expected, strict=True):
        assert np.array_equal(got, want)
    assert not data.decoded  # let go once read
