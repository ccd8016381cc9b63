"""The source's worked examples as synthetic step telemetry (seconds, as the training process records it).

- input: "a step takes 300 ms total and 180 ms of that is waiting for data";
- straggler: "most workers take 180 ms per step but one takes 420 ms and spends 250 ms waiting on input".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

STEPS = 100


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


def input_bound() -> pd.DataFrame:
    """One rank: 300 ms steps, 180 ms of them data wait."""
    return _rows(0, data=180, compute=95, sync=0, optim=15, step=300)


def straggler_input() -> pd.DataFrame:
    """Eight ranks: seven at 180 ms per step, rank 3 at 420 ms of which 250 ms is waiting on input."""
    import pandas as pd

    peers = [_rows(r, data=20, compute=140, sync=5, optim=15, step=180) for r in range(8) if r != 3]
    slow = _rows(3, data=250, compute=145, sync=5, optim=15, step=420)
    return pd.concat([*peers, slow], ignore_index=True)


EXAMPLES = {"input": input_bound, "straggler": straggler_input}
