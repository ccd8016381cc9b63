"""The torch loop's one data loader: global batches cut from windows of a split, each rank taking its share.

A source is the split cut into groups (``group_rows``: a Parquet file's row groups, or one group: tensors already in
memory) that decodes a list of them into arrays (``read_groups``). Every epoch takes the groups in an order seeded by
``(seed, epoch)``, a window of them at a time (about ``window_rows`` rows: the memory bound), and visits each window's
rows in an order seeded by ``(seed, epoch, window)``. Global batches are cut from that stream and each rank takes its
contiguous share of each, so 1 and N ranks follow one trajectory. A window that holds the whole split (``window_rows``
0, or at least the split's rows: the in-memory case) is its groups in file order, decoded once and kept for every
epoch; smaller ones are decoded on a reader thread (a spare core), one window ahead: the first before the loop's
first step (``preload``, as the whole split is), each next one while the previous one trains, the next epoch's first
while this epoch's last trains and the model validates. So at most two windows are held: the one in use and the one
read ahead. The checkpoint holds ``(epoch, batch position)``; a resumed run decodes the window that position falls
in again, orders it the same way and goes on from the same row: exact resume.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mlassets.core.train.faults import Faults

if TYPE_CHECKING:
    import torch

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]  # category codes, numerics, target as the loss wants it


class Source(Protocol):
    group_rows: list[int]

    def read_groups(self, groups: list[int]) -> Arrays: ...


class _Window:
    """A decoded window and the order its rows are visited in; ``take`` hands out the next rows' positions."""

    def __init__(self, arrays: Arrays, order: np.ndarray, offset: int = 0) -> None:
        self.arrays, self.order, self.offset = arrays, order, offset

    def left(self) -> int:
        return len(self.order) - self.offset

    def take(self, n: int) -> tuple[Arrays, np.ndarray]:
        rows = self.order[self.offset:self.offset + n]
        self.offset += len(rows)
        return self.arrays, rows


class Batches:
    """This rank's share of each global batch of an epoch, read as described above; it is both the loader and the
    sampler of the loop (``position`` counts global batches; ``state_dict`` is the position). ``epochs``: the run's
    last epoch, when known (the next epoch's first window is then read while this one ends)."""

    def __init__(self, source: Source, faults: Faults, global_batch: int, rank: int, world_size: int, seed: int,
                 window_rows: int = 0, epochs: int | None = None) -> None:
        self.source, self.faults = source, faults
        self.n = sum(source.group_rows)
        self.window_rows = window_rows if 0 < window_rows < self.n else 0  # 0: one window, the whole split
        self.global_batch, self.rank, self.world_size, self.seed = global_batch, rank, world_size, seed
        self.epoch, self.position, self.epochs = 1, 0, epochs
        self._whole: Arrays | None = None  # the one window's arrays, decoded once
        self._pool: ThreadPoolExecutor | None = None  # one reader thread: at most one window read ahead
        self._ahead: tuple[tuple[int, int], Future[_Window]] | None = None  # ((epoch, window), its decode)

    def __len__(self) -> int:
        return -(-self.n // self.global_batch)

    def preload(self) -> None:
        """Decode the window the position falls in now: the loop calls it once set up (resumed, if it resumes), so
        its first step waits for no window, whether that is the whole split (kept for every epoch) or a smaller one
        (decoded on the reader thread and handed to the first step)."""
        if not self.window_rows:
            if self._whole is None:
                self._whole = self.source.read_groups(self.windows()[0])
            return
        future = self._read_ahead(self.epoch, self._locate(self.windows())[0])
        if future is not None:
            future.result()

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.position = epoch, 0
        if self.window_rows:
            self._read_ahead(epoch, 0)

    def global_size(self, batch: int) -> int:
        """Number of rows in global batch ``batch`` (the last one may be short)."""
        return min(self.global_batch, self.n - batch * self.global_batch)

    def windows(self, epoch: int | None = None) -> list[list[int]]:
        """The groups of this epoch (or of ``epoch``) in seeded order, cut into windows of at least ``window_rows``
        rows (one window of every group in file order when the split fits in one)."""
        group_rows = self.source.group_rows
        if not self.window_rows:
            return [list(range(len(group_rows)))]
        order = np.random.default_rng([self.seed, self.epoch if epoch is None else epoch]).permutation(len(group_rows))
        out, current, rows = [], [], 0
        for group in order.tolist():
            current.append(group)
            rows += group_rows[group]
            if rows >= self.window_rows:
                out.append(current)
                current, rows = [], 0
        return out + ([current] if current else [])

    def _locate(self, windows: list[list[int]]) -> tuple[int, int]:
        """(the window the position falls in, the rows of it that come before the position)."""
        w, skip = 0, self.position * self.global_batch
        for groups in windows:
            size = sum(self.source.group_rows[g] for g in groups)
            if skip < size:
                break
            skip -= size
            w += 1
        return w, skip

    def _window(self, epoch: int, index: int, groups: list[int]) -> _Window:
        if not self.window_rows:
            if self._whole is None:
                self._whole = self.source.read_groups(groups)
            arrays = self._whole
        else:
            arrays = self.source.read_groups(groups)
        return _Window(arrays, np.random.default_rng([self.seed, epoch, index]).permutation(len(arrays[2])))

    def _read_ahead(self, epoch: int, index: int) -> Future[_Window] | None:
        """Window ``index`` of ``epoch`` decoding on the reader thread (a core the loop leaves idle), started now
        unless it is the one read ahead already; another one read ahead is let go: never more than the window in use
        and one more."""
        if self._ahead is not None and self._ahead[0] == (epoch, index):
            return self._ahead[1]
        if self._ahead is not None:
            self._ahead[1].cancel()  # not started yet: never decoded
            self._ahead = None
        windows = self.windows(epoch)
        if index >= len(windows):
            return None
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stream-window")
        self._ahead = (epoch, index), self._pool.submit(self._window, epoch, index, windows[index])
        return self._ahead[1]

    def _take(self, index: int, windows: list[list[int]]) -> _Window:
        """Window ``index`` of this epoch: the one read ahead, else decoded now (the one window: in this thread)."""
        future = self._read_ahead(self.epoch, index) if self.window_rows else None
        if future is None:
            return self._window(self.epoch, index, windows[index])
        self._ahead = None  # handed over: the next one may be read ahead
        return future.result()

    def _read_next(self, index: int, count: int) -> None:
        """Read ahead the window after window ``index - 1``: this epoch's next, else the next epoch's first."""
        if not self.window_rows:
            return
        if index < count:
            self._read_ahead(self.epoch, index)
        elif self.epochs is not None and self.epoch < self.epochs:
            self._read_ahead(self.epoch + 1, 0)  # read while this epoch's last window trains and it validates

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        windows = self.windows()
        w, skip = self._locate(windows)
        current: _Window | None = None
        for batch in range(self.position, len(self)):
            need, parts, taken = self.global_size(batch), [], False
            while need:
                if current is None or not current.left():
                    current, taken = self._take(w, windows), True
                    current.offset, skip = skip, 0
                    w += 1
                parts.append(current.take(need))
                need -= len(parts[-1][1])
            shared = self._share(parts)
            del parts  # a batch across two windows held the last one's rows until here
            if taken:
                self._read_next(w, len(windows))  # the next window is decoded while this one trains
            self.faults.slow_loader()
            self.position = batch + 1
            yield shared

    def _share(self, parts: list[tuple[Arrays, np.ndarray]]) -> tuple[torch.Tensor, ...]:
        """This rank's contiguous share of a global batch made of ``parts`` (rows of one window each)."""
        import torch

        total = sum(len(rows) for _, rows in parts)
        base, extra = divmod(total, self.world_size)  # as np.array_split cuts it
        lo = self.rank * base + min(self.rank, extra)
        hi = lo + base + (self.rank < extra)
        picked, start = [], 0
        for arrays, rows in parts:
            a, b = max(lo - start, 0), min(hi - start, len(rows))
            if a < b:
                picked.append((arrays, rows[a:b]))
            start += len(rows)
        if not picked:
            picked = [(parts[0][0], parts[0][1][:0])]
        out = []
        for i in range(3):  # torch's gather: several times numpy's fancy indexing on a batch of rows
            chunks = [torch.from_numpy(arrays[i]).index_select(0, torch.from_numpy(rows)) for arrays, rows in picked]
            out.append(chunks[0] if len(chunks) == 1 else torch.cat(chunks))
        return tuple(out)

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if int(state["seed"]) != self.seed:
            raise ValueError(f"data loader state: seed {state['seed']} != {self.seed}")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
