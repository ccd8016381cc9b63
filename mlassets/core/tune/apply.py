"""Training uses the newest tuned values unless the config pins them (``tuning.apply: false``).

The config a training run receives, and records (MLflow's ``config/pipeline.json``, the registry record's
``config_hash``), is the effective one, so ``mlassets rebuild`` reproduces a model trained with tuned values.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlassets.core.config import PipelineConfig
from mlassets.core.tune.record import TunedHparams, newest
from mlassets.core.tune.space import with_values


def effective_config(cfg: PipelineConfig, tuned: TunedHparams | None) -> PipelineConfig:
    """``cfg`` with the tuned values of ``tuning.params`` when ``tuning.apply`` is true; else ``cfg`` itself.

    Values of parameters the config no longer searches are left out: the config pins those.
    """
    if not cfg.tuning.apply or tuned is None:
        return cfg
    if tuned.dataset != cfg.dataset.name:
        raise ValueError(f"tuned values of dataset {tuned.dataset!r} cannot configure {cfg.dataset.name!r}")
    values = {name: value for name, value in tuned.values.items() if name in cfg.tuning.params}
    return with_values(cfg, values) if values else cfg


def tuned_config(cfg: PipelineConfig, key: Sequence[str]) -> PipelineConfig:
    """The config training runs with: ``effective_config`` over the newest record of the tuning asset ``key``
    (read only when ``tuning.apply`` is true)."""
    return effective_config(cfg, newest(key) if cfg.tuning.apply else None)
