"""Config rules of the model section: the family, its plug-in and its own parameters (``model.params``).

The trees' parameters are checked here by name and range, so a typo fails at load like every other key; a torch
plug-in's parameters are its builder's keyword arguments and are passed through as they are.
"""

from __future__ import annotations

import math
import re
from typing import Any

from mlassets.core.config.families import facts_of, plugin_families
from mlassets.core.config.schema import PipelineConfig
from mlassets.core.config.typed import ConfigError

_MODULE_PLUGIN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_FILE_PLUGIN = re.compile(r"^[^:]+\.py:[A-Za-z_]\w*$")
# name -> (type, low, high, default); bounds inclusive. One table for both tree families: the platform maps each
# name onto LightGBM's and XGBoost's own (see mlassets.core.train.trees.gbdt).
TREE_PARAMS: dict[str, tuple[type, float, float, Any]] = {
    "rounds": (int, 1, 100_000, 500),  # boosting rounds at most (early stopping may end sooner)
    "early_stopping_rounds": (int, 0, 100_000, 50),  # 0: never stop early
    "learning_rate": (float, 1e-6, 1.0, 0.05),
    "num_leaves": (int, 2, 131_072, 31),
    "max_depth": (int, -1, 64, -1),  # -1: no limit (LightGBM); XGBoost grows by leaves (lossguide) then
    "min_child_samples": (int, 1, 1_000_000, 20),
    "feature_fraction": (float, 1e-3, 1.0, 1.0),
    "bagging_fraction": (float, 1e-3, 1.0, 1.0),
    "lambda_l2": (float, 0.0, 1e6, 0.0),
    "max_bin": (int, 2, 65_535, 255),
    "max_cat_to_onehot": (int, 1, 1024, 4),
}


def plugin_kind(spec: str) -> str:
    """``module`` (``package.module:function``) or ``file`` (``path/to/file.py:function``); else ConfigError."""
    if _FILE_PLUGIN.fullmatch(spec):
        return "file"
    if _MODULE_PLUGIN.fullmatch(spec):
        return "module"
    raise ConfigError(f"model.plugin: {spec!r} is neither package.module:function nor path/to/file.py:function")


def tree_params(params: dict[str, Any]) -> dict[str, Any]:
    """The trees' parameters with defaults filled in; an unknown name or a value out of range names the key."""
    out = {name: default for name, (_, _, _, default) in TREE_PARAMS.items()}
    for name, value in params.items():
        if name not in TREE_PARAMS:
            raise ConfigError(f"model.params.{name}: unknown for boosted trees (known: {', '.join(TREE_PARAMS)})")
        kind, low, high, _ = TREE_PARAMS[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and value != int(value)):
            raise ConfigError(f"model.params.{name}: expected {'an integer' if kind is int else 'a number'}, "
                              f"got {value!r}")
        if not (math.isfinite(value) and low <= value <= high):
            raise ConfigError(f"model.params.{name}: must be in [{low:g}, {high:g}], got {value!r}")
        out[name] = kind(value)
    return out


def check_model(cfg: PipelineConfig) -> None:
    model, tr, task = cfg.model, cfg.training, cfg.dataset.task
    facts, plugins = facts_of(model.family), " or ".join(map(repr, plugin_families()))
    if facts.plugin:
        if not model.plugin:
            raise ConfigError(f"model.plugin: family {model.family!r} needs the builder of your module, "
                              "package.module:function or path/to/file.py:function")
        plugin_kind(model.plugin)
    elif model.plugin:
        raise ConfigError(f"model.plugin: {model.plugin!r} is for family {plugins}; family {model.family!r} takes none")
    if not facts.own_params and model.params:
        raise ConfigError(f"model.params.{next(iter(model.params))}: family {model.family!r} takes embedding_dim, "
                          "hidden and dropout; model.params is for the torch plug-in and the boosted trees")
    if facts.trees:
        tree_params(model.params)
    if not facts.distributed and tr.nproc != 1:
        raise ConfigError(f"training.nproc: {tr.nproc}; boosted trees train in one process (give it "
                          "training.threads instead)")
    if facts.trees and tr.checkpoint_every_minutes > 0:
        raise ConfigError(f"training.checkpoint_every_minutes: {tr.checkpoint_every_minutes:g}; boosted trees "
                          "checkpoint every training.checkpoint_every_steps rounds (each checkpoint starts a chunk "
                          "with its own sampling seeds, so it cannot follow the clock)")
    if not facts.warm_start and cfg.automation.retrain == "warm_start":
        raise ConfigError(f"automation.retrain: 'warm_start'; model.family {model.family!r} trains from scratch "
                          "(use full)")
    if task == "multiclass" and (model.output_min is not None or model.output_max is not None):
        raise ConfigError("model.output_min / output_max: a multiclass model's outputs are class probabilities")
