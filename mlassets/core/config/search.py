"""What may be searched: one ``Param`` per tunable value and the section of the config it lives in.

A plain table beside the config (it imports no stage), so that a model family (``core/train``) can name its search
space and tuning (``core/tune``) can draw from it, each importing only down the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Param:
    """One searchable value: a float range (log-scaled or not), or integer choices."""

    section: Literal["training", "model", "params"]  # params: the family's own, model.params.<name>
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple[int, ...] = ()  # integers (batch size, embedding width): one of these
    integer: bool = False  # an integer range [low, high] (tree leaves, rows per leaf)


SPACE: dict[str, Param] = {  # the keys are config.families.TUNABLE
    "lr": Param("training", 1e-4, 3e-2, log=True),
    "weight_decay": Param("training", 1e-6, 1e-1, log=True),
    "dropout": Param("model", 0.0, 0.5),
    "batch_size": Param("training", choices=(128, 256, 512, 1024, 2048)),
    "embedding_dim": Param("model", choices=(4, 8, 16, 32)),
    "num_leaves": Param("params", 8, 256, log=True, integer=True),  # the boosted trees' (model.params.<name>)
    "learning_rate": Param("params", 0.01, 0.3, log=True),
    "min_child_samples": Param("params", 5, 200, log=True, integer=True),
    "feature_fraction": Param("params", 0.5, 1.0),
}
