"""The model-family protocol: how one kind of model is built, trained, saved, loaded and searched.

Everything after training (evaluation, the gate, the registry, serving, rebuild, warm start, tuning, drift and
the dashboard) holds a ``ModelBundle`` and asks its family only what this protocol says, and what else it needs
to know about a family (its kind, library, search space, defaults) it reads from the family's row in
``mlassets.core.config.families``, the one table of family facts; nothing asks which family it has.
``model.family`` names the row; the row names the class here that implements it, built with the row's facts:

- the networks (``torch_run.torch_nn``): the built-in embeddings + MLP and the user's own ``nn.Module``
  (``model.plugin``), both trained by the torch loop (DDP/FSDP, torchrun);
- the boosted trees (``trees.gbdt``): one class over the libraries' modules (``trees/<library>_lib.py``), one
  process, native categorical features.

Inputs are the preprocessor's arrays: category codes ``x_cat`` (int64 [n, n_cat], 0 = unknown) and numerics
``x_num`` (float32 [n, n_num], standardized). A family's raw output is one value per row (regression: the
standardized target; binary: the logit of P(1)) or one logit per class (multiclass, [n, k]); the bundle turns
it into target units or probabilities.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mlassets.core.config.families import FamilyFacts, facts_of
from mlassets.core.train.feature_spec import FeatureSpec

if TYPE_CHECKING:
    import numpy as np

    from mlassets.core.config import PipelineConfig
    from mlassets.core.config.search import Param
    from mlassets.core.train.job import TrainJob
    from mlassets.core.train.reporting import Reporter
    from mlassets.core.train.result import TrainingResult
    from mlassets.core.train.splits import Splits


class Family(Protocol):
    """One kind of model, built with its row of facts. ``weights_file`` is the file in a bundle whose sha256 the
    registry record keeps."""

    facts: FamilyFacts  # its row: whether it is distributed, warm-starts, what it searches ...
    name: str  # facts.name
    weights_file: str

    def check(self, cfg: PipelineConfig) -> None:
        """Config rules of this family (``ConfigError`` naming the key and value), before any work."""

    def train(self, job: TrainJob, reporter: Reporter, hard_crash: bool) -> TrainingResult | None:
        """Fit on the job's splits with checkpoints; resume from the newest valid one of this run; rank 0 writes
        the bundle and ``result.json`` and returns the result (other ranks None)."""

    def save(self, model: Any, directory: Path) -> None:
        """Write the model to ``directory / weights_file`` (tensors or a native model file, never a pickle)."""

    def load(self, directory: Path, spec: FeatureSpec, model_config: Mapping[str, Any]) -> Any:
        """The model saved in ``directory``, safely (``weights_only`` tensors, native model files)."""

    def predict(self, model: Any, x_cat: np.ndarray, x_num: np.ndarray) -> np.ndarray:
        """Raw outputs, float64: [n] or [n, k] (multiclass)."""

    def search_space(self, cfg: PipelineConfig) -> dict[str, Param]:
        """What tuning may search for this family (``tuning.params`` chooses among these)."""

    def fit_trial(self, cfg: PipelineConfig, splits: Splits, out_dir: Path, data_version: str,
                  report: Callable[[int, float], None]) -> float:
        """Train one tuning trial in this process on ``splits``, calling ``report(step, val_metric)`` as it goes
        (an epoch, or a number of boosting rounds; it raises to prune); the best validation metric."""

    def recorded(self, cfg: PipelineConfig) -> dict[str, str]:
        """What the registry record keeps about the model's code (a plug-in's name and source sha256)."""

    def warm_start(self, bundle: Any, pre: Any, model: Any) -> tuple[Any, list[str]]:
        """``model``'s state with ``bundle``'s learned state mapped onto it (categories matched by name), and
        what was left as initialized; only when ``facts.warm_start``."""


_LOADED: dict[str, Family] = {}


def family_of(name: str) -> Family:
    """The family ``name`` (its row in ``mlassets.core.config.families``), its implementation built with its facts;
    ValueError naming ``model.family`` for another name."""
    if name not in _LOADED:
        facts = facts_of(name)
        module, _, cls = facts.implementation.partition(":")
        _LOADED[name] = getattr(importlib.import_module(module), cls)(facts)
    return _LOADED[name]


