"""The torch loop's one data loader: global batches cut from windows of a split, each rank taking its share.

A source is the split cut into groups (``group_rows``: a Parquet file's row groups, or one group: tensors already in
memory) that decodes a list of them into arrays (``read_groups``). Every epoch takes the groups in an order seeded by
``(seed, epoch)``, a window of them at a time (about ``window_rows`` rows: the memory bound), and visits each window's
rows in an order seeded by ``(seed, epoch, window)``. Global batches are cut from that stream and each rank takes its
contiguous share of each, so 1 and N ranks follow one trajectory. A window that holds the whole split (``window_rows``
0, or at least the split's rows: the in-memory case) is its groups in file order, decoded once and kept for every
epoch; smaller ones are decoded on a spare core while the previous one trains. The checkpoint holds ``(epoch, batch
position)``; a resumed run decodes the window that position falls in again, orders it the same way and goes on from
the same row: exact resume.
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
    sampler of the loop (``position`` counts global batches; ``state_dict`` is the position)."""

    def __init__(self, source: Source, faults: Faults, global_batch: int, rank: int, world_size: int, seed: int,
                 window_rows: int = 0) -> None:
        self.source, self.faults = source, faults
        self.n = sum(source.group_rows)
        self.window_rows = window_rows if 0 < window_rows < self.n else 0  # 0: one window, the whole split
        self.global_batch, self.rank, self.world_size, self.seed = global_batch, rank, world_size, seed
        self.epoch, self.position = 1, 0
        self._whole: Arrays | None = None  # the one window's arrays, decoded once

    def __len__(self) -> int:
        return -(-self.n // self.global_batch)

    def preload(self) -> None:
        """Decode the one window now (a split that fits is read before the loop, not in its first step)."""
        if not self.window_rows and self._whole is None:
            self._whole = self.source.read_groups(self.windows()[0])

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.position = epoch, 0

    def global_size(self, batch: int) -> int:
        """Number of rows in global batch ``batch`` (the last one may be short)."""
        return min(self.global_batch, self.n - batch * self.global_batch)

    def windows(self) -> list[list[int]]:
        """This epoch's groups in seeded order, cut into windows of at least ``window_rows`` rows (one window of
        every group in file order when the split fits in one)."""
        group_rows = self.source.group_rows
        if not self.window_rows:
            return [list(range(len(group_rows)))]
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(group_rows))
        out, current, rows = [], [], 0
        for group in order.tolist():
            current.append(group)
            rows += group_rows[group]
            if rows >= self.window_rows:
                out.append(current)
                current, rows = [], 0
        return out + ([current] if current else [])

    def _window(self, index: int, groups: list[int]) -> _Window:
        if not self.window_rows:
            if self._whole is None:
                self._whole = self.source.read_groups(groups)
            arrays = self._whole
        else:
            arrays = self.source.read_groups(groups)
        return _Window(arrays, np.random.default_rng([self.seed, self.epoch, index]).permutation(len(arrays[2])))

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        windows = self.windows()
        sizes = [sum(self.source.group_rows[g] for g in w) for w in windows]
        w, skip = 0, self.position * self.global_batch
        while w < len(windows) and skip >= sizes[w]:  # the window the position falls in
            skip -= sizes[w]
            w += 1
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stream-window") as pool:
            ahead = self._submit(pool, windows, w)
            current: _Window | None = None
            for batch in range(self.position, len(self)):
                need, parts = self.global_size(batch), []
                while need:
                    if current is None or not current.left():
                        current = ahead.result()
                        current.offset, skip = skip, 0
                        w += 1
                        # the next window is decoded while this one trains (a core the loop leaves idle)
                        ahead = self._submit(pool, windows, w)
                    parts.append(current.take(need))
                    need -= len(parts[-1][1])
                self.faults.slow_loader()
                self.position = batch + 1
                yield self._share(parts)

    def _submit(self, pool: ThreadPoolExecutor, windows: list[list[int]], w: int) -> Future[_Window] | None:
        if w >= len(windows):
            return None
        if not self.window_rows:  # decoded once, in this thread: there is nothing to overlap it with
            done: Future[_Window] = Future()
            done.set_result(self._window(w, windows[w]))
            return done
        return pool.submit(self._window, w, windows[w])

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
