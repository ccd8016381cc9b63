"""Step telemetry: one row per rank per step, each part measured on its own clock interval.

Parts of a step: ``t_data_wait`` (blocked on the next batch), ``t_compute`` (forward + backward up to the
moment the last gradient bucket is handed to the all-reduce), ``t_sync`` (from then until backward
returns, i.e. waiting on the all-reduce), ``t_optim`` (optimizer and LR scheduler), ``t_checkpoint``
(the training loop blocked by checkpointing). ``t_step`` is timed separately around all of them. The rows
themselves (``StepLog``) and their summaries are in the torch-free ``steplog``.
"""

import time

import torch
import torch.distributed as dist

from mlassets.core.train.steplog import COLUMNS, PARTS, StepLog, aggregate, read_rows, summary

__all__ = ["COLUMNS", "PARTS", "StepLog", "SyncTimer", "aggregate", "gpu_sample", "read_rows", "summary",
           "timed_allreduce"]


class SyncTimer:
    """DDP communication-hook state: when the last bucket went to the all-reduce, plus an injected delay."""

    def __init__(self, world_size: int, delay_s: float = 0.0, cuda: bool = False) -> None:
        self.world_size = world_size
        self.delay_s = delay_s
        self.cuda = cuda
        self.last_launch: float | None = None
        self.last_event: torch.cuda.Event | None = None

    def reset(self) -> None:
        self.last_launch, self.last_event = None, None


def timed_allreduce(state: SyncTimer, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP's default averaging all-reduce, timestamped at launch; the delay fault sleeps before completion."""
    if state.cuda:
        state.last_event = torch.cuda.Event(enable_timing=True)
        state.last_event.record()
    state.last_launch = time.perf_counter()
    tensor = bucket.buffer().div_(state.world_size)
    future = dist.all_reduce(tensor, async_op=True).get_future()
    delay = state.delay_s

    def done(fut: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
        if delay:
            time.sleep(delay)
        return fut.value()[0]

    return future.then(done)


def gpu_sample(device: torch.device) -> tuple[float, float]:
    """(utilization %, allocated MiB) through NVML where a GPU is used; NaN otherwise."""
    if device.type != "cuda":
        return float("nan"), float("nan")
    try:
        util = float(torch.cuda.utilization(device))
    except Exception:  # noqa: BLE001 - NVML (pynvml) missing or unsupported
        util = float("nan")
    return util, torch.cuda.memory_allocated(device) / 2**20
