"""What a model is built from (its inputs' shape and task): shared by the splits, the bundle and every family,
below all of them, so the family protocol and the data it is trained on never import each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FeatureSpec:
    """What a model is built from: the inputs' shape and the task (a plug-in's builder gets exactly this)."""

    cardinalities: list[int]  # per categorical column: vocabulary size + 1 (index 0: unknown)
    n_numeric: int
    output_size: int  # 1 (regression, binary) or the number of classes
    task: str  # regression, binary or multiclass
    params: dict[str, Any] = field(default_factory=dict)  # model.params, free for the family


def output_size(task: str, classes: list[str]) -> int:
    """One output per row (regression, binary) or one logit per class (multiclass)."""
    return len(classes) if task == "multiclass" else 1
