"""Imports across the whole package: no circle between any two modules, and no private name taken from another one.

Every import counts as an edge: at module level, inside a function, and under ``if TYPE_CHECKING:``. A function-level
import only postpones a circle to run time, and an annotation-only one still makes two modules that cannot be read,
type-checked or moved apart; either way the two belong in one module, or what they share in a third below both.

A private name is one that starts with ``_`` (dunders aside): a module, a function, a constant. Another module may
not import one (``from m import _name``, ``from pkg import _module``, ``import pkg._module``) nor reach one through a
module it imported (``m._name``); what another module needs is public, in the module where it belongs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mlassets"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in PACKAGE.rglob("*.py")}


def _source(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The absolute module a ``from`` import reads (relative imports resolved against ``module``)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _private(name: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in name.split("."))


def _imports(module: str, path: Path, modules: set[str]) -> Iterator[tuple[int, str, str]]:
    """``(line, target module, imported name)`` for every import of a package module in ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mlassets":
                    yield node.lineno, alias.name, alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _source(node, module, path)
            if source.split(".")[0] != "mlassets":
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield node.lineno, sub if sub in modules else source, sub


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    names = set(modules)
    return {m: {t for _, t, _ in _imports(m, p, names) if t in names and t != m} for m, p in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (``[a, b, ..., a]``), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                here = [*path, node]
                return [*here[here.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [])):
            return found
    return None


def _private_imports(modules: dict[str, Path]) -> list[str]:
    names, found = set(modules), []
    for module, path in sorted(modules.items()):
        bound: dict[str, str] = {}  # local name -> package module it refers to
        for line, target, name in _imports(module, path, names):
            own = target == module or name.startswith(f"{module}.")
            if _private(name.removeprefix("mlassets.")) and not own:
                found.append(f"{module}:{line} imports {name}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                bound.update({a.asname: a.name for a in node.names if a.asname and a.name in names})
            elif isinstance(node, ast.ImportFrom):
                source = _source(node, module, path)
                bound.update({a.asname or a.name: f"{source}.{a.name}" for a in node.names
                              if f"{source}.{a.name}" in names})
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                    and _private(node.attr) and bound[node.value.id] != module):
                found.append(f"{module}:{node.lineno} uses {bound[node.value.id]}.{node.attr}")
    return found


def test_the_package_has_no_import_circle() -> None:
    cycle = _cycle(_graph(_modules()))
    assert cycle is None, "an import circle: " + " -> ".join(cycle or [])


def test_no_module_imports_a_private_name_of_another() -> None:
    found = _private_imports(_modules())
    assert not found, "private names used across modules:\n" + "\n".join(found)


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    modules = {}
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        modules[name] = path
    return modules


def test_the_checks_see_a_circle_through_a_function_and_a_type_only_import(tmp_path: Path) -> None:
    modules = _package(tmp_path, {
        "mlassets.a": "def f():\n    from mlassets.b import g\n",
        "mlassets.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mlassets.c import C\n",
        "mlassets.c": "import mlassets.a\n",
        "mlassets.d": "from mlassets import a\n",
    })
    assert _cycle(_graph(modules)) == ["mlassets.a", "mlassets.b", "mlassets.c", "mlassets.a"]
    modules["mlassets.c"].write_text("X = 1\n")
    assert _cycle(_graph(modules)) is None


def test_the_checks_see_private_names_taken_three_ways(tmp_path: Path) -> None:
    modules = _package(tmp_path, {
        "mlassets.pkg.__init__": "",
        "mlassets.pkg._impl": "def _helper(): ...\ndef helper(): ...\n",
        "mlassets.pkg.face": "from mlassets.pkg._impl import helper\n",
        "mlassets.user": "from mlassets.pkg import face\nface._x\nfrom mlassets.pkg.face import _y\n",
        "mlassets.self_use": "_z = 1\n",
    })
    modules = {(k.removesuffix(".__init__")): v for k, v in modules.items()}
    assert _private_imports(modules) == [
        "mlassets.pkg.face:1 imports mlassets.pkg._impl.helper",
        "mlassets.user:3 imports mlassets.pkg.face._y",
        "mlassets.user:2 uses mlassets.pkg.face._x",
    ]
