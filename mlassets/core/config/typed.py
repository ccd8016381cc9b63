"""Build frozen dataclasses from parsed YAML, strictly: unknown keys and wrong types name the key path."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Literal


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type."""


def at_least(values: dict[str, float], minimum: float) -> None:
    """Each value (by its key path) at least ``minimum``; else ``ConfigError`` naming the key and the value."""
    for key, value in values.items():
        if value < minimum:
            raise ConfigError(f"{key}: must be >= {minimum:g}, got {value!r}")


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _coerce(tp: Any, value: Any, path: str, allow_nan: bool = False) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        for alternative in inner[1:]:  # the first type's error is the one reported
            try:
                return _coerce(alternative, value, path, allow_nan)
            except ConfigError:
                continue
        return _coerce(inner[0], value, path, allow_nan)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{path}: {_describe(value)} is not one of {list(args)}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected a list, got {_describe(value)}")
        if args[0] is float and all(type(v) in (float, int) for v in value) and (
                allow_nan or all(map(math.isfinite, value))):
            return [float(v) for v in value]  # long numeric lists (quantile grids): the common case, at C speed
        return [_coerce(args[0], v, f"{path}[{i}]", allow_nan) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {_describe(value)}")
        return {str(k): _coerce(args[1], v, f"{path}.{k}", allow_nan) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return build(tp, value, path, allow_nan)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true/false, got {_describe(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {_describe(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{path}: expected a number, got {_describe(value)}")
        if not math.isfinite(value) and not allow_nan:
            raise ConfigError(f"{path}: expected a finite number, got {_describe(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a string, got {_describe(value)}")
        return value
    raise ConfigError(f"{path}: unsupported type {tp}")  # pragma: no cover - schema bug


def build(cls: type, data: Any, path: str, allow_nan: bool = False) -> Any:
    """``cls`` from a mapping, strictly; floats must be finite unless ``allow_nan`` (records of measurements)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path or 'config'}: expected a mapping, got {_describe(data)}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise ConfigError(f"{where}: unknown key (allowed: {', '.join(sorted(names))})")
    kwargs = {}
    for f in dataclasses.fields(cls):
        key = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{key}: required key is missing")
            continue
        kwargs[f.name] = _coerce(hints[f.name], data[f.name], key, allow_nan)
    return cls(**kwargs)
