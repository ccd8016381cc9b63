"""The endpoint of a registered model, built: its champion loaded through ``load_champion``'s checks, its dataset
config's ``serving`` settings, spans traced to ``$MLASSETS_HOME/traces/serving.jsonl`` (``mlassets serve`` runs it)."""

from __future__ import annotations

from pathlib import Path

from mlassets.core import paths
from mlassets.core.config import PipelineConfig, config_paths, load_config, resolve_config

TRACE_FILE = Path("traces") / "serving.jsonl"


def find_config(model: str, spec: str | None) -> PipelineConfig | None:
    """The dataset config of ``model``: ``spec`` (a shipped name or file), else the one whose
    ``model.registered_name`` is ``model`` among the registered/shipped configs (None: the defaults)."""
    if spec:
        return load_config(resolve_config(spec))
    for path in config_paths():
        cfg = load_config(path)
        if cfg.model.registered_name == model:
            return cfg
    return None


def build(model: str, config: str | None = None, poll: bool = True,  # noqa: ANN201 - FastAPI, imported lazily
          **settings_overrides: object):
    """The app of ``model``'s champion, loaded through ``load_champion``'s checks (a ``ServingError`` otherwise);
    ``settings_overrides`` replace keys of the config's ``serving`` section."""
    import dataclasses

    from mlassets.core.config.serving import ServingConfig
    from mlassets.core.diagnose import spans
    from mlassets.serve.app import create_app
    from mlassets.serve.features import lookup_for
    from mlassets.serve.load import load_champion
    from mlassets.serve.rows import schema_of
    from mlassets.serve.swap import Champion
    from mlassets.serve.telemetry import export_otlp

    cfg = find_config(model, config)
    served = load_champion(model)
    pre = served.bundle.preprocessor
    spans.enable(paths.home() / TRACE_FILE)
    export_otlp()
    settings = dataclasses.replace(cfg.serving if cfg is not None else ServingConfig(), **settings_overrides)
    if cfg is not None and settings.online.max_metric_regression is None:  # unset: the gate's tolerance
        settings = dataclasses.replace(settings, online=dataclasses.replace(
            settings.online, max_metric_regression=cfg.gate.tolerance))
    schema = schema_of(pre.categorical, pre.numeric, cfg)
    return create_app(Champion(served), schema, settings, poll, lookup_for(cfg, schema))
