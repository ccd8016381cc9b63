"""Two worked examples (``mlassets diagnose --example``), and a user's own numbers, as synthetic step telemetry
(seconds, as the training process records it), so the same diagnosis that reads a recorded run reads them:

- input: "a step takes 300 ms total and 180 ms of that is waiting for data";
- straggler: "most workers take 180 ms per step but one takes 420 ms and spends 250 ms waiting on input". The
  job is synchronous, so the others' 180 ms of own work become 420 ms steps: they wait 240 ms per step in the
  gradient all-reduce for the slow rank (their recorded sync is 245 ms: that wait and 5 ms of real sync).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

STEPS = 100
SENTENCES = {
    "input": "If a step takes 300 ms total and 180 ms of that is waiting for data, then the GPU is idle most of the "
             "time and the input path is the bottleneck.",
    "straggler": "If most workers take 180 ms per step but one takes 420 ms and spends 250 ms waiting on input, the "
                 "bottleneck is the input path, not the model.",
}


def _rows(rank: int, data: float, compute: float, sync: float, optim: float, step: float) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    from mlassets.core.diagnose.steps import COLUMNS

    n = STEPS
    ms = {"t_data_wait": data, "t_compute": compute, "t_sync": sync, "t_optim": optim, "t_checkpoint": 0.0}
    frame = pd.DataFrame({"attempt": np.ones(n, np.int32), "epoch": np.ones(n, np.int32),
                          "step": np.arange(1, n + 1, dtype=np.int32), "rank": np.full(n, rank, np.int32),
                          **{k: np.full(n, v / 1000) for k, v in ms.items()}, "t_step": np.full(n, step / 1000),
                          "samples": np.full(n, 64, np.int64), "gpu_util": np.nan, "gpu_mem_mb": np.nan})
    return frame[list(COLUMNS)]


@dataclass(frozen=True)
class StepNumbers:
    """One step as people describe it, in ms: every rank alike, and optionally one slow rank of its own."""

    ranks: int = 1
    data_wait: float = 0.0
    compute: float = 0.0
    sync: float = 0.0  # real gradient sync, not counting any wait for a slow rank
    optimizer: float = 0.0
    other: float = 0.0
    slow_rank: int = -1  # -1: none
    slow_data_wait: float = 0.0  # the slow rank's parts (its sync and optimizer: as the others')
    slow_compute: float = 0.0

    def frame(self) -> pd.DataFrame:
        """The telemetry rows a synchronous job with these numbers records: a step lasts as long as the slowest
        rank's own work plus sync, and the faster ranks spend the difference waiting in the sync."""
        import pandas as pd

        if self.ranks < 1 or (self.slow_rank >= self.ranks):
            raise ValueError(f"ranks {self.ranks} and slow rank {self.slow_rank}: the slow rank must be one of them")
        own = self.data_wait + self.compute + self.optimizer + self.other
        slow_own = self.slow_data_wait + self.slow_compute + self.optimizer + self.other if self.slow_rank >= 0 else own
        step = max(own, slow_own) + self.sync
        frames = []
        for rank in range(self.ranks):  # a rank's sync is the real sync plus its wait for the slowest
            data, compute, mine = ((self.slow_data_wait, self.slow_compute, slow_own) if rank == self.slow_rank
                                   else (self.data_wait, self.compute, own))
            frames.append(_rows(rank, data, compute, step - mine, self.optimizer, step))
        return pd.concat(frames, ignore_index=True)


def input_bound() -> pd.DataFrame:
    """One rank: 300 ms steps, 180 ms of them data wait."""
    return StepNumbers(data_wait=180, compute=95, optimizer=15, other=10).frame()


def straggler_input() -> pd.DataFrame:
    """Eight ranks: seven doing 180 ms of work per step, rank 3 420 ms of which 250 ms is waiting on input; the
    seven wait for it in the all-reduce (245 ms of sync: 240 ms of waiting and 5 ms of real sync)."""
    return StepNumbers(ranks=8, data_wait=20, compute=140, sync=5, optimizer=15, slow_rank=3, slow_data_wait=250,
                       slow_compute=150).frame()


EXAMPLES = {"input": input_bound, "straggler": straggler_input}
