"""A torch plug-in checked when its config loads, without running it (nor importing torch): its file or module
is there, its source parses, it defines the function named, and the modules it imports at its top exist. What
only running it can tell (a builder that raises, a wrong output shape) is reported by the training process."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from mlassets.core.config.model import plugin_kind
from mlassets.core.config.typed import ConfigError


def _find(module: str) -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a parent package missing, or one that fails to import
        return None


def _source(spec: str) -> tuple[str, str]:
    target = spec.rpartition(":")[0]
    if plugin_kind(spec) == "file":
        path = Path(target)
        if not path.is_file():
            raise ConfigError(f"model.plugin: {spec!r}: the file {str(path)!r} does not exist")
        return path.read_text(errors="replace"), str(path)
    found = _find(target)
    if found is None or not found.origin or not Path(found.origin).is_file():
        raise ConfigError(f"model.plugin: {spec!r}: module {target!r} cannot be found (is it installed, or on "
                          "PYTHONPATH?)")
    return Path(found.origin).read_text(errors="replace"), found.origin


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def check_plugin_source(spec: str) -> None:
    """``ConfigError`` naming ``model.plugin`` and the cause when the plug-in cannot be loaded."""
    if not spec:
        return
    source, where = _source(spec)
    try:
        tree = ast.parse(source, where)
    except SyntaxError as exc:
        raise ConfigError(f"model.plugin: {spec!r} cannot be imported: {where}, line {exc.lineno}: {exc.msg}") from None
    function = spec.rpartition(":")[2]
    if function not in _defined(tree):
        raise ConfigError(f"model.plugin: {spec!r}: {where} defines no function {function!r}")
    for node in tree.body:
        modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                   else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for module in modules:
            if _find(module.split(".")[0]) is None:
                raise ConfigError(f"model.plugin: {spec!r} cannot be imported: {where}, line {node.lineno} imports "
                                  f"{module!r}, which is not installed")
