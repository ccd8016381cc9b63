"""A torch plug-in (family ``torch``): the user's builder of an ``nn.Module``, found by ``model.plugin``.

``package.module:function`` is imported; ``path/to/file.py:function`` is loaded from that file. The builder gets a
``FeatureSpec`` (category cardinalities, numeric width, output size, task, ``model.params``) and returns a module
whose ``forward(x_cat, x_num)`` gives ``[n]`` (regression, binary) or ``[n, k]`` logits (multiclass). The registry
record keeps the plug-in and the sha256 of its source file; a rebuild refuses other code.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from mlassets.core.config.model import plugin_kind


class PluginError(ValueError):
    """The plug-in cannot be imported, is not a builder, or is not the code the record names."""


def _module(spec: str) -> ModuleType:
    target, _, _ = spec.rpartition(":")
    if plugin_kind(spec) == "module":
        try:
            return importlib.import_module(target)
        except ImportError as exc:
            raise PluginError(f"model.plugin: {spec!r} cannot be imported ({exc})") from None
    path = Path(target)
    if not path.is_file():
        raise PluginError(f"model.plugin: {spec!r}: the file {str(path)!r} does not exist")
    source = path.read_bytes()
    name = f"mlassets_plugin_{hashlib.sha256(str(path.resolve()).encode() + source).hexdigest()[:16]}"
    if name not in sys.modules:  # once per file content: every rank and every call builds from the same module
        # the bytes read (and hashed) above are the bytes run: no second read, and no bytecode cache written beside
        # the file (a model folder's plug-in source sits in a sealed folder)
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None,
                                                                                 origin=str(path)))
        module.__file__ = str(path)
        sys.modules[name] = module
        try:
            exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the plug-in the config names
        except Exception as exc:
            del sys.modules[name]
            raise PluginError(f"model.plugin: {spec!r} failed to import: {type(exc).__name__}: {exc}") from None
    return sys.modules[name]


def builder(spec: str) -> Callable[..., Any]:
    """The plug-in's builder function."""
    function = getattr(_module(spec), spec.rpartition(":")[2], None)
    if not callable(function):
        raise PluginError(f"model.plugin: {spec!r} names no function")
    return function


def source_file(spec: str) -> Path:
    """The file the plug-in's code is in (what its sha256 is taken of); a file plug-in's without running it."""
    if plugin_kind(spec) == "file":
        return Path(spec.rpartition(":")[0])
    path = inspect.getsourcefile(_module(spec))
    if path is None:
        raise PluginError(f"model.plugin: {spec!r} has no source file to record")
    return Path(path)


def source_sha256(spec: str) -> str:
    return hashlib.sha256(source_file(spec).read_bytes()).hexdigest()


def check_unchanged(spec: str, recorded: str) -> None:
    """``PluginError`` naming both hashes when the plug-in's source is not the recorded one."""
    actual = source_sha256(spec)
    if actual != recorded:
        raise PluginError(f"model.plugin {spec!r}: its source {source_file(spec)} has sha256 {actual[:16]}..., but "
                          f"the record names {recorded[:16]}...: not the code that trained this model; refusing")
