"""core reads as the pipeline: stage folders that only look down the pipeline, no import cycle, no dagster.

Every run-time ``import`` in ``mlassets/core`` (module level or inside a function; ``if TYPE_CHECKING`` blocks are
annotations, not imports) is an edge; a stage may import its own
folder and the stages before it, and the shared modules (config, records, paths, tracking, lineage) import no
stage at all.
"""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "mlassets" / "core"
STAGES = ["data", "features", "train", "tune", "evaluate", "registry", "monitor", "diagnose",  # in pipeline order
          "automation"]  # what starts runs: may look at every stage


def _module(path: Path) -> str:
    parts = path.relative_to(CORE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:`` (annotations only: never imported at run time)."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            todo.extend(node.orelse)
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _imports(path: Path, modules: set[str] = frozenset()) -> set[str]:
    """What a file uses: ``from pkg import sub`` (a module) uses ``pkg.sub``; ``from mod import name`` uses ``mod``."""
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in CORE.rglob("*.py")}
    return {name: {m for m in _imports(path, set(modules)) if m in modules and m != name}
            for name, path in modules.items()}


def _stage(module: str) -> int | None:
    part = module.split(".")[2] if module.count(".") >= 2 else ""
    return STAGES.index(part) if part in STAGES else None


def test_core_never_imports_dagster_or_streamlit() -> None:
    for path in CORE.rglob("*.py"):
        bad = {m for m in _imports(path) if m.split(".")[0] in ("dagster", "dagster_mlflow", "streamlit")}
        assert not bad, f"{path.relative_to(CORE)} imports {sorted(bad)}"


def test_every_import_looks_down_the_pipeline() -> None:
    wrong = []
    for module, targets in _graph().items():
        here = _stage(module)
        for target in targets:
            there = _stage(target)
            if there is not None and (here is None or there > here):
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports that run back up the pipeline:\n" + "\n".join(sorted(wrong))


def test_no_import_cycle_between_modules() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if nxt not in state and (cycle := visit(nxt, [*path, node])):
                return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [])
            assert cycle is None, " -> ".join(cycle or [])


def test_stage_folders_say_what_they_are() -> None:
    for stage in STAGES:
        doc = ast.get_docstring(ast.parse((CORE / stage / "__init__.py").read_text()))
        assert doc and len(doc) > 80, f"mlassets/core/{stage}/__init__.py needs a one-paragraph docstring"
