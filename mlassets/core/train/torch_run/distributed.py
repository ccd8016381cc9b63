"""Ranks, devices and parallelism for the training process, apart from the model and the loop.

``torchrun`` sets ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``; without them the process is one rank with no
process group. gloo on CPU, nccl on CUDA; every collective has ``collective_timeout_s`` so a dead or
stuck rank fails the run instead of hanging it. Checkpoint collectives get their own gloo group.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from mlassets.core.config import TrainingConfig
from mlassets.core.train.torch_run.timing import SyncTimer, timed_allreduce


@dataclass
class DistEnv:
    """This process's place in the run."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str  # "gloo" / "nccl", or "none" for a single process without a process group
    checkpoint_group: dist.ProcessGroup | None = None

    @property
    def distributed(self) -> bool:
        return self.backend != "none"

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def env_ranks() -> tuple[int, int, int]:
    """``(rank, world_size, local_rank)`` from the torchrun environment (``0, 1, 0`` without it)."""
    try:
        rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
        local = int(os.environ.get("LOCAL_RANK", str(rank)))
    except ValueError as exc:
        raise ValueError(f"RANK/WORLD_SIZE/LOCAL_RANK must be integers: {exc}") from None
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"RANK={rank} WORLD_SIZE={world}: need 0 <= RANK < WORLD_SIZE")
    return rank, world, local


def setup(tr: TrainingConfig) -> DistEnv:
    """Pick backend and device, and join the process group when there is more than one rank."""
    rank, world, local = env_ranks()
    cuda = torch.cuda.is_available()
    backend = tr.backend if tr.backend != "auto" else ("nccl" if cuda else "gloo")
    if backend == "nccl" and not cuda:
        raise ValueError("training.backend: nccl needs a CUDA device; use gloo (or auto) on CPU")
    device = torch.device("cuda", local % max(torch.cuda.device_count(), 1)) if backend == "nccl" else \
        torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if world == 1 and "TORCHELASTIC_RUN_ID" not in os.environ:  # torchrun with one rank still joins a group
        return DistEnv(rank, world, local, device, "none")
    timeout = datetime.timedelta(seconds=tr.collective_timeout_s)
    if not dist.is_initialized():
        # cpu:gloo beside nccl: async checkpoint saves need a CPU backend
        dist.init_process_group("cpu:gloo,cuda:nccl" if backend == "nccl" else "gloo", timeout=timeout)
    group = dist.new_group(backend="gloo", timeout=timeout)
    return DistEnv(rank, world, local, device, backend, group)


def teardown(env: DistEnv) -> None:
    if env.distributed and dist.is_initialized():
        dist.destroy_process_group()


@contextlib.contextmanager
def deterministic(seed: int, threads: int, device: torch.device) -> Iterator[None]:
    """Seed every RNG, force deterministic algorithms and a fixed thread count; restore them after."""
    previous = (torch.are_deterministic_algorithms_enabled(), torch.get_num_threads())
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # needed by deterministic cuBLAS
        torch.backends.cudnn.benchmark = False
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous[0])
        torch.set_num_threads(previous[1])


def parallelize(model: nn.Module, env: DistEnv, sharding: str, timer: SyncTimer) -> nn.Module:
    """DDP with a timed all-reduce hook, or FSDP2 ``fully_shard`` per layer; the model itself on one rank."""
    model.to(env.device)
    if not env.distributed:
        return model
    if sharding == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for module in model.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                fully_shard(module)
        fully_shard(model)
        return model
    ddp = nn.parallel.DistributedDataParallel(
        model, device_ids=[env.device.index] if env.device.type == "cuda" else None, gradient_as_bucket_view=True)
    ddp.register_comm_hook(timer, timed_allreduce)
    return ddp


def all_sum(values: list[float], env: DistEnv) -> list[float]:
    """Sum float64 values over the ranks (identity on one rank)."""
    if not env.distributed:
        return values
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor)
    return tensor.tolist()


def broadcast_int(value: int, env: DistEnv) -> int:
    """Rank 0's ``value`` on every rank."""
    if not env.distributed:
        return value
    tensor = torch.tensor([value], dtype=torch.int64)
    dist.broadcast(tensor, src=0)
    return int(tensor.item())


def barrier(env: DistEnv) -> None:
    if env.distributed:
        dist.barrier()


def all_max(values: list[float], env: DistEnv) -> list[float]:
    """Element-wise maximum over the ranks (identity on one rank)."""
    if not env.distributed:
        return values
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def full_state_dict(model: nn.Module, env: DistEnv) -> dict[str, torch.Tensor]:
    """Unsharded CPU weights on rank 0 (a collective under FSDP; other ranks get an empty dict)."""
    if not env.distributed:
        return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
