"""What a study searches, and how a set of values enters a config (the study's trials and training share it)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from mlassets.core.config import ConfigError, PipelineConfig, parse_config
from mlassets.core.config.families import facts_of
from mlassets.core.config.search import SPACE, Param

__all__ = ["SPACE", "Param", "epochs_of", "suggest", "trial_length", "with_values"]


def suggest(trial: Any, params: Sequence[str], space: Mapping[str, Param] = SPACE) -> dict[str, float]:
    """One value per searched parameter, drawn by the study's sampler (``trial`` is an ``optuna.Trial``)."""
    values: dict[str, float] = {}
    for name in params:
        p = space[name]
        if p.choices:
            values[name] = trial.suggest_categorical(name, list(p.choices))
        elif p.integer:
            values[name] = trial.suggest_int(name, int(p.low), int(p.high), log=p.log)
        else:
            values[name] = trial.suggest_float(name, p.low, p.high, log=p.log)
    return values


def with_values(cfg: PipelineConfig, values: Mapping[str, float]) -> PipelineConfig:
    """``cfg`` with ``values`` in their sections (``lr`` -> ``training.lr``, ``dropout`` -> ``model.dropout``,
    ``num_leaves`` -> ``model.params.num_leaves``); every config rule is checked again, naming the key and value
    that break one."""
    sections: dict[str, dict[str, float | int]] = {"training": {}, "model": {}, "params": {}}
    for name, value in values.items():
        if name not in SPACE:
            raise ConfigError(f"tuned value {name!r}: not a tunable parameter (allowed: {', '.join(SPACE)})")
        param = SPACE[name]
        where = f"model.params.{name}" if param.section == "params" else f"{param.section}.{name}"
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"{where}: tuned value {value!r} is not a finite number")
        whole = bool(param.choices) or param.integer
        if whole and value != int(value):
            raise ConfigError(f"{where}: tuned value {value!r} is not an integer")
        sections[param.section][name] = int(value) if whole else float(value)
    model = dataclasses.replace(cfg.model, **sections["model"])
    if sections["params"]:
        model = dataclasses.replace(model, params={**model.params, **sections["params"]})
    out = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, **sections["training"]), model=model)
    parse_config(out.to_dict())  # a tuned value that breaks a rule fails here, by key path
    return out


def epochs_of(cfg: PipelineConfig) -> int:
    """Epochs a trial trains: ``tuning.epochs``, else the config's own."""
    return cfg.tuning.epochs or cfg.training.epochs


def trial_length(cfg: PipelineConfig) -> str:
    """What one trial trains, in words: a network's epochs, or the boosted trees' rounds (reported every 10)."""
    if facts_of(cfg.model.family).trees:
        from mlassets.core.config.model import tree_params

        return f"up to {tree_params(cfg.model.params)['rounds']} rounds"
    return f"{epochs_of(cfg)} epoch(s)"
