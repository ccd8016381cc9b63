"""The ranks a config asks for, against the node that trains it: this machine (embedded), or the node named by
``$MLASSETS_TRAINING_NODE`` (``cpus=64,gpus=8``: a cluster's training nodes, whatever runs the check; ``any``:
no check). In the production profile without that variable the node is unknown here and nothing is checked.

Read without torch: CPUs from the scheduler's affinity, GPUs from the NVIDIA driver's ``/proc`` entries
(within ``$CUDA_VISIBLE_DEVICES``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mlassets.core import settings
from mlassets.core.config.schema import PipelineConfig
from mlassets.core.config.typed import ConfigError

NODE_ENV = "MLASSETS_TRAINING_NODE"
_NVIDIA = Path("/proc/driver/nvidia/gpus")


@dataclass(frozen=True)
class Node:
    cpus: int
    gpus: int
    source: str  # said in errors: "this machine" or the variable

    def __str__(self) -> str:
        return f"{self.source} has {self.cpus} CPU core(s) and {self.gpus} GPU(s)"


def _machine_gpus() -> int:
    found = len(list(_NVIDIA.iterdir())) if _NVIDIA.is_dir() else 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return found
    return min(found, len([d for d in visible.split(",") if d.strip() and not d.strip().startswith("-")]))


def _parse(text: str) -> Node:
    fields: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key.strip() not in ("cpus", "gpus") or not value.strip().isdigit():
            raise ConfigError(f"${NODE_ENV}: {text!r} is not 'cpus=N,gpus=M' (or 'any' for no check)")
        fields[key.strip()] = int(value)
    if "cpus" not in fields:
        raise ConfigError(f"${NODE_ENV}: {text!r} names no cpus (e.g. 'cpus=64,gpus=8')")
    return Node(fields["cpus"], fields.get("gpus", 0), f"${NODE_ENV} ({text})")


def training_node() -> Node | None:
    """The node configs are checked against; None when nothing is checked."""
    text = os.environ.get(NODE_ENV, "").strip()
    if text.lower() == "any":
        return None
    if text:
        return _parse(text)
    if settings.production():
        return None
    return Node(len(os.sched_getaffinity(0)), _machine_gpus(), "this machine")


def check_resources(cfg: PipelineConfig, node: Node | None = None) -> None:
    """``training.nproc`` ranks (each with ``training.threads`` threads) must fit the node: one GPU per rank
    with nccl (or auto on a node with GPUs), else one core per thread of every rank."""
    node = training_node() if node is None else node
    if node is None:
        return
    tr = cfg.training
    hint = (f"; set ${NODE_ENV}=cpus=N,gpus=M to the nodes training runs on (or 'any' to skip this check on a "
            "cluster)")
    if tr.backend == "nccl" or (tr.backend == "auto" and node.gpus > 0):
        if tr.nproc > node.gpus:
            raise ConfigError(f"training.nproc: {tr.nproc} ranks need {tr.nproc} GPUs with backend "
                              f"{tr.backend!r}; {node}{hint}")
        return
    if tr.nproc * tr.threads > node.cpus:
        raise ConfigError(f"training.nproc: {tr.nproc} ranks x training.threads {tr.threads} need "
                          f"{tr.nproc * tr.threads} CPU cores; {node}{hint}")
