"""What tuning may search, per model family: a ``Param`` is a float range (log-scaled or not) or integer choices in
a config section. Families name their searchable parameters from here (``Family.search_space``); the study
(``mlassets.core.tune``) draws values and puts them into a config (``tune.space.with_values``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Param:
    """One searchable value: a float range (log-scaled or not), or integer choices."""

    section: Literal["training", "model"]
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple[int, ...] = ()  # integers (batch size, embedding width): one of these


SPACE: dict[str, Param] = {  # the torch families' (the keys are config.automation.TUNABLE)
    "lr": Param("training", 1e-4, 3e-2, log=True),
    "weight_decay": Param("training", 1e-6, 1e-1, log=True),
    "dropout": Param("model", 0.0, 0.5),
    "batch_size": Param("training", choices=(128, 256, 512, 1024, 2048)),
    "embedding_dim": Param("model", choices=(4, 8, 16, 32)),
}
