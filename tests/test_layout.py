"""The house: the package root holds only its face (``__init__``) and ``definitions``; every other module lives in a
room, and rooms import only those below them, never back up:

    integrations < core (and the package face) < examples < serve < defs < definitions < host < cli

``core`` is the pure pipeline (its own order is checked in tests/core/test_layout.py); ``serve`` loads and serves
registered models on core; ``defs`` are the thin Dagster assets over both; ``host`` runs Dagster and MLflow on one
machine; ``cli`` holds the commands, on top of everything.
"""

from __future__ import annotations

from pathlib import Path

from tests.core.test_layout import _imports

PACKAGE = Path(__file__).resolve().parents[1] / "mlassets"
ROOMS = ["integrations", "core", "examples", "serve", "defs", "definitions", "host", "cli"]


def _room(module: str) -> int | None:
    parts = module.split(".")
    if module == "mlassets":
        return 1  # the package face (``use_home``, ``tracking_uri``): on core, as core's own; no room imports it
    if parts[0] != "mlassets":
        return None
    return ROOMS.index(parts[1]) if parts[1] in ROOMS else None


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_root_holds_only_the_package_face_and_definitions() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "definitions.py"))
    assert not loose, f"modules at the package root: {loose}; give each a room ({', '.join(ROOMS)})"


def test_every_room_imports_only_the_rooms_below() -> None:
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        module = _module(path)
        here = _room(module)
        assert here is not None, f"{module} is in no room"
        wrong += [f"{module} -> {target}" for target in sorted(_imports(path))
                  if (there := _room(target)) is not None and there > here]
    assert not wrong, "imports that run back up the house:\n" + "\n".join(wrong)


def test_the_layout_check_sees_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from mlassets.cli import main\n")
    assert "mlassets.cli" in _imports(bad) and _room("mlassets.cli") > _room("mlassets.core.paths")
