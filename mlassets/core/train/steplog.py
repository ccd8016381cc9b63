"""Step telemetry rows: one row per rank per step in ``<dir>/rank<r>.parquet``, and their summaries.

Torch-free, so that every model family (the boosted trees too) writes the same rows the dashboard reads; the torch
loop's timers live in ``torch_run.timing``.
"""

from array import array
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

PARTS = ("t_data_wait", "t_compute", "t_sync", "t_optim", "t_checkpoint")
COLUMNS = ("attempt", "epoch", "step", "rank", *PARTS, "t_step", "samples", "gpu_util", "gpu_mem_mb")
_INTS = {"attempt", "epoch", "step", "rank", "samples"}  # kept as float64 (exact below 2**53), written as ints


class StepLog:
    """The rows of one rank, written to ``<dir>/rank<r>.parquet``; rows of earlier attempts are kept. Held as one
    flat buffer of float64s (``len(COLUMNS)`` a row, 104 bytes; a tuple of Python numbers was about 450): an epoch
    of many small steps keeps little."""

    def __init__(self, directory: Path, rank: int, attempt: int) -> None:
        self.path = directory / f"rank{rank}.parquet"
        self.rank = rank
        self.attempt = attempt
        self._values = array("d")
        self._window_start = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="telemetry-writer")
        self._pending: Future[Path] | None = None

    def add(self, epoch: int, step: int, parts: Sequence[float], t_step: float, samples: int,
            gpu: tuple[float, float]) -> None:
        self._values.extend((self.attempt, epoch, step, self.rank, *parts, t_step, samples, *gpu))

    def __len__(self) -> int:
        return len(self._values) // len(COLUMNS)

    @property
    def rows(self) -> list[tuple[float, ...]]:
        return self._rows(0)

    def _rows(self, start: int) -> list[tuple[float, ...]]:
        width = len(COLUMNS)
        values = self._values[start * width:]
        return [tuple(values[i:i + width]) for i in range(0, len(values), width)]

    def window(self) -> list[tuple[float, ...]]:
        """Rows since the previous call (for periodic aggregates)."""
        rows, self._window_start = self._rows(self._window_start), len(self)
        return rows

    def resume(self, last_step: int) -> None:
        """Keep the rows of earlier attempts up to the checkpoint this attempt resumed from."""
        if not self.path.is_file():
            return
        table = pq.read_table(self.path)
        keep = [row for row in zip(*(table[c].to_pylist() for c in COLUMNS), strict=True) if row[2] <= last_step]
        self._values[:0] = array("d", [float(v) for row in keep for v in row])
        self._window_start += len(keep)

    def flush(self, wait: bool = False) -> None:
        """Write the rows so far in the background (at each checkpoint, so that a crash keeps them); ``wait``: and
        block until they are written."""
        rows = array("d", self._values)
        if self._pending is not None:
            self._pending.result()
        self._pending = self._executor.submit(self._write, rows)
        if wait:
            self._pending.result()

    def write(self) -> Path:
        """Write every row now; the file of the finished run."""
        if self._pending is not None:
            self._pending.result()
        path = self._write(self._values)
        self._executor.shutdown(wait=True)
        return path

    def _write(self, values: array) -> Path:
        import numpy as np

        self.path.parent.mkdir(parents=True, exist_ok=True)
        matrix = np.frombuffer(values, dtype=np.float64).reshape(-1, len(COLUMNS)) if len(values) else \
            np.empty((0, len(COLUMNS)))
        types = [pa.int32()] * 4 + [pa.float64()] * (len(PARTS) + 1) + [pa.int64(), pa.float64(), pa.float64()]
        table = pa.table({c: pa.array(matrix[:, i].astype(np.int64) if c in _INTS else matrix[:, i], type=t)
                          for i, (c, t) in enumerate(zip(COLUMNS, types, strict=True))})
        tmp = self.path.with_suffix(".parquet.tmp")
        pq.write_table(table, tmp)
        tmp.replace(self.path)
        return self.path


def aggregate(rows: Sequence[Sequence[Any]]) -> dict[str, float]:
    """Median step, throughput and the share of each part over ``rows`` (any ranks, any steps)."""
    import numpy as np

    if not rows:
        return {}
    matrix = np.asarray(rows, dtype=np.float64)
    return _aggregate({c: matrix[:, i] for i, c in enumerate(COLUMNS)})


def _aggregate(col: dict[str, Any]) -> dict[str, float]:
    """``aggregate`` of the rows given as columns (float64 arrays)."""
    import numpy as np

    total = float(np.sum(col["t_step"]))
    ranks = len(np.unique(col["rank"]))
    out = {"median_step_ms": 1000 * float(np.median(col["t_step"])),
           "samples_per_s": float(np.sum(col["samples"])) / (total / ranks) if total > 0 else float("nan")}
    for part in PARTS:
        out[f"share_{part[2:]}"] = float(np.sum(col[part])) / total if total > 0 else float("nan")
        out[f"median_{part[2:]}_ms"] = 1000 * float(np.median(col[part]))
    out["share_covered"] = sum(out[f"share_{p[2:]}"] for p in PARTS)
    return out


def read_rows(directory: Path) -> list[tuple[Any, ...]]:
    """All rows of all ranks under ``directory``."""
    rows: list[tuple[Any, ...]] = []
    for path in sorted(directory.glob("rank*.parquet")):
        table = pq.read_table(path)
        rows += list(zip(*(table[c].to_pylist() for c in COLUMNS), strict=True))
    return rows


def summary(directory: Path) -> dict[str, float]:
    """The run's telemetry summary for the asset's metadata: medians, part shares, the slowest rank (read as columns:
    a long run's rows never become Python objects)."""
    import numpy as np

    tables = [pq.read_table(path, columns=list(COLUMNS)) for path in sorted(directory.glob("rank*.parquet"))]
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return {}
    col = {c: np.concatenate([t[c].to_numpy().astype(np.float64) for t in tables]) for c in COLUMNS}
    out = {k: round(v, 4) for k, v in _aggregate(col).items()}
    ranks = np.unique(col["rank"])
    out["slowest_rank_median_step_ms"] = round(1000 * max(float(np.median(col["t_step"][col["rank"] == r]))
                                                          for r in ranks), 4)
    out["ranks"] = len(ranks)
    out["steps"] = max(int(np.sum(col["rank"] == r)) for r in ranks)
    return out
