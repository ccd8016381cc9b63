"""The environment variables table (``mlassets.core.env_vars``) names every ``MLASSETS_*`` variable the code and
the deployment files use, and nothing they do not."""

from __future__ import annotations

import re
from pathlib import Path

from mlassets.core.env_vars import KINDS, VARIABLES

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("mlassets", "dashboard", "infra", "bench", "scripts")
NAME = re.compile(r"\b(MLASSETS_[A-Z0-9_]*[A-Z0-9])\b")
TABLE = ROOT / "mlassets" / "core" / "env_vars.py"


def _files() -> list[Path]:
    return [p for folder in SOURCES for p in (ROOT / folder).rglob("*") if p.is_file() and p != TABLE
            and p.suffix in {".py", ".yaml", ".yml", ".example", ".conf", ""} and "__pycache__" not in p.parts]


def used() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in _files():
        for name in NAME.findall(path.read_text(errors="replace")):
            found.setdefault(name, path)
    return found


def test_every_variable_in_the_code_is_in_the_table() -> None:
    names = {v.name for v in VARIABLES}
    missing = {n: str(p.relative_to(ROOT)) for n, p in used().items() if n not in names}
    assert missing == {}, "add these to mlassets/core/env_vars.py (and run make reference)"


def test_every_variable_in_the_table_is_used() -> None:
    text = "\n".join(p.read_text(errors="replace") for p in _files())
    unused = [v.name for v in VARIABLES if not re.search(rf"\b{v.name}\b", text)]
    assert unused == []


def test_the_table_is_well_formed() -> None:
    names = [v.name for v in VARIABLES]
    assert len(names) == len(set(names))
    assert all(v.kind in KINDS and v.meaning.endswith(".") for v in VARIABLES)
