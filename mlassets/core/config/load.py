"""Reading a pipeline config: YAML (a safe load within limits, ``yaml_limits``) into the typed sections, then
every rule, then the resources it asks for against the machine (``resources``).

Every error names the offending key path (``training.epochs``) and the value that was given.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import yaml

from mlassets.core import paths
from mlassets.core.config.automation import tuned_params
from mlassets.core.config.checks import check
from mlassets.core.config.model import plugin_kind
from mlassets.core.config.plugin_source import check_plugin_source
from mlassets.core.config.resources import check_resources
from mlassets.core.config.schema import PipelineConfig
from mlassets.core.config.typed import ConfigError, build
from mlassets.core.config.yaml_limits import check_size, load_yaml
from mlassets.core.metric_defs import TASK_METRICS


def parse_config(data: Any) -> PipelineConfig:
    cfg = build(PipelineConfig, data, "")
    gate = data.get("gate") if isinstance(data, dict) else None
    if not (isinstance(gate, dict) and "main_metric" in gate):  # unset: the task's natural metric
        natural = TASK_METRICS[cfg.dataset.task][0]
        cfg = dataclasses.replace(cfg, gate=dataclasses.replace(cfg.gate, main_metric=natural))
    if not cfg.tuning.params:  # the family's default search, written into the config (and its hash) as it is used
        cfg = dataclasses.replace(cfg, tuning=dataclasses.replace(
            cfg.tuning, params=tuned_params(cfg.model.family, cfg.tuning.params)))
    check(cfg)
    return cfg


def load_config(path: str | Path) -> PipelineConfig:
    """Load and validate a pipeline config from a YAML file (a safe load, size and aliases bounded, no key
    twice), then check its ranks against the machine that trains (``check_resources``)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    check_size(path.stat().st_size, str(path))  # before reading: a 50 MB file is refused unread
    data = load_yaml(path.read_text(), str(path))
    try:
        cfg = _with_paths_from(parse_config(data), path.resolve().parent)
        check_plugin_source(cfg.model.plugin)  # a missing or broken plug-in now, not after 40 s of a run
        check_resources(cfg)
        return cfg
    except ConfigError as exc:
        raise ConfigError(f"{path.name}: {exc}") from None


def _with_paths_from(cfg: PipelineConfig, base: Path) -> PipelineConfig:
    """Relative file paths (a files source's, a plug-in file) are read from the config file's folder."""
    ds = cfg.dataset

    def absolute(template: str) -> str:
        return template if not template or Path(template).is_absolute() else str(base / template)

    tables = {name: dataclasses.replace(spec, path=absolute(spec.path)) for name, spec in ds.tables.items()}
    plugin = cfg.model.plugin
    if plugin and plugin_kind(plugin) == "file":  # a plug-in file beside the config
        file, _, function = plugin.rpartition(":")
        plugin = f"{absolute(file)}:{function}"
    return dataclasses.replace(cfg, dataset=dataclasses.replace(ds, path=absolute(ds.path), tables=tables),
                               model=dataclasses.replace(cfg.model, plugin=plugin),
                               automation=dataclasses.replace(cfg.automation, landing=absolute(cfg.automation.landing)))


CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
CONFIGS_ENV = "MLASSETS_CONFIGS"  # config files or folders of them, separated by os.pathsep


def shipped_configs() -> dict[str, Path]:
    """The dataset configs shipped with the package, by file stem."""
    return {p.stem: p for p in sorted(CONFIG_DIR.glob("*.yaml"))}


def config_paths(spec: str | None = None) -> list[Path]:
    """The configs to build graphs for: ``spec`` (or ``$MLASSETS_CONFIGS``): files, folders of ``*.yaml``, shipped
    names; else the configs registered in the embedded stack (``$MLASSETS_HOME/configs``); else the shipped ones.
    A missing file is a ``ConfigError`` naming it."""
    spec = os.environ.get(CONFIGS_ENV, "") if spec is None else spec
    if not spec.strip():
        registered = sorted(paths.configs_dir().glob("*.yaml")) if paths.configs_dir().is_dir() else []
        return registered or list(shipped_configs().values())
    found: list[Path] = []
    for item in filter(None, (s.strip() for s in spec.split(os.pathsep))):
        path = Path(item)
        if path.is_dir():
            found.extend(sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")))
        elif path.is_file():
            found.append(path)
        elif item in shipped_configs():
            found.append(shipped_configs()[item])
        else:
            raise ConfigError(f"{CONFIGS_ENV}: {item!r} is neither a config file, a folder of them, nor a shipped "
                              f"config ({', '.join(shipped_configs())})")
    return found


def save_config(cfg: PipelineConfig, directory: Path) -> Path:
    """Write ``cfg`` as ``<directory>/<dataset name>.yaml`` (every key, as it would load back), atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{cfg.dataset.name}.yaml"
    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False)
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_suffix(".yaml.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def resolve_config(name_or_path: str) -> Path:
    """A shipped config by name (``flights``) or a YAML file by path."""
    shipped = shipped_configs()
    return shipped[name_or_path] if name_or_path in shipped else Path(name_or_path)
