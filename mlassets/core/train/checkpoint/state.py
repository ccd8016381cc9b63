"""The full training state a checkpoint holds, split into tensors (DCP) and plain JSON.

Tensors: model and optimizer state (sharded under FSDP). JSON, per rank: RNG states (torch, CUDA,
Python, NumPy), data-loader position, this rank's loss sum. JSON, rank 0: step, epoch, curves, optimizer
hyper-parameters, LR-scheduler state and the key that says which config the checkpoint belongs to.
"""

from __future__ import annotations

import base64
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_state_dict,
)

from mlassets.core.train.checkpoint.files import resume_key
from mlassets.core.train.checkpoint.manager import load_tensors, read_meta
from mlassets.core.train.torch_run.distributed import DistEnv

__all__ = ["Progress", "capture", "load_model_weights", "restore", "resume_key", "rng_state", "set_rng_state",
           "tensor_state"]


@dataclass
class Progress:
    """Where the run is: optimizer steps done, the epoch in progress (or next), curves so far."""

    step: int = 0
    epoch: int = 1
    mid_epoch: bool = False
    loss_sum: float = 0.0  # this rank's sum of per-row training losses in the epoch in progress
    curves: list[dict[str, Any]] = field(default_factory=list)


def _b64(tensor: torch.Tensor) -> str:
    return base64.b64encode(tensor.numpy().tobytes()).decode()


def _unb64(text: str) -> torch.Tensor:
    return torch.frombuffer(bytearray(base64.b64decode(text)), dtype=torch.uint8)


def rng_state(device: torch.device) -> dict[str, Any]:
    version, internal, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "torch": _b64(torch.get_rng_state()),
        "cuda": _b64(torch.cuda.get_rng_state(device)) if device.type == "cuda" else None,
        "python": [version, list(internal), gauss],
        "numpy": [name, keys.tolist(), int(pos), int(has_gauss), float(cached)],
    }


def set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    torch.set_rng_state(_unb64(state["torch"]))
    if device.type == "cuda" and state.get("cuda"):
        torch.cuda.set_rng_state(_unb64(state["cuda"]), device)
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))


def tensor_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict[str, Any], list[Any]]:
    """``({"model": ..., "optim": ...}, param_groups)``: the tensors for DCP and the JSON remainder."""
    model_sd, optim_sd = get_state_dict(model, optimizer)
    return {"model": model_sd, "optim": optim_sd["state"]}, optim_sd["param_groups"]


def capture(model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, loader: Any,
            progress: Progress, env: DistEnv, key: str,
            val_metric: float | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(tensors, rank_state, meta)`` of the current state."""
    tensors, groups = tensor_state(model, optimizer)
    rank_state = {"rng": rng_state(env.device), "loader": loader.state_dict(), "loss_sum": progress.loss_sum}
    meta = {"step": progress.step, "epoch": progress.epoch if progress.mid_epoch else progress.epoch - 1,
            "next_epoch": progress.epoch, "mid_epoch": progress.mid_epoch, "curves": progress.curves,
            "val_metric": val_metric, "resume_key": key, "world_size": env.world_size,
            "param_groups": json.loads(json.dumps(groups)), "scheduler": scheduler.state_dict(),
            "saved_at": time.time()}
    return tensors, rank_state, meta


def restore(directory: Path, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any,
            loader: Any, env: DistEnv) -> Progress:
    """Load a checkpoint into the live objects (every rank); returns the progress it records."""
    meta = read_meta(directory)
    rank_state = json.loads((directory / f"rank{env.rank}.json").read_text())
    tensors, _ = tensor_state(model, optimizer)
    load_tensors(directory, tensors)
    set_state_dict(model, optimizer, model_state_dict=tensors["model"],
                   optim_state_dict={"state": tensors["optim"], "param_groups": meta["param_groups"]})
    scheduler.load_state_dict(meta["scheduler"])
    if meta["mid_epoch"]:
        loader.load_state_dict(rank_state["loader"])
    set_rng_state(rank_state["rng"], env.device)
    return Progress(step=int(meta["step"]), epoch=int(meta["next_epoch"]), mid_epoch=bool(meta["mid_epoch"]),
                    loss_sum=float(rank_state["loss_sum"]) if meta["mid_epoch"] else 0.0, curves=meta["curves"])


def load_model_weights(directory: Path, model: nn.Module) -> None:
    """Only the model weights of a checkpoint (the best epoch's weights go into the bundle)."""
    tensors = {"model": get_model_state_dict(model)}
    load_tensors(directory, tensors)
    set_model_state_dict(model, tensors["model"])
