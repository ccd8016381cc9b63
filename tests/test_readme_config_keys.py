"""The README's table of config keys names every key the config accepts (and nothing it does not)."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

from mlassets.core.config import PipelineConfig

README = Path(__file__).resolve().parents[1] / "README.md"
WILDCARD = {"dataset.columns": "<c>", "dataset.tables": "<t>"}  # dicts of sections: one entry per name


def config_keys(cls: type = PipelineConfig, prefix: str = "") -> set[str]:
    keys: set[str] = set()
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        tp = hints[f.name]
        if path in WILDCARD:
            keys |= config_keys(typing.get_args(tp)[1], f"{path}.{WILDCARD[path]}.")
        elif dataclasses.is_dataclass(tp):
            keys |= config_keys(tp, f"{path}.")
        else:
            keys.add(path)
    return keys


def documented_keys() -> set[str]:
    """First cells of the 'Config keys' table: `a.b.c`, `d`, `e` names a.b.c, a.b.d and a.b.e."""
    text = README.read_text()
    table = text[text.index("### Config keys"):]
    keys: set[str] = set()
    for line in table.splitlines()[1:]:
        if line.startswith("#"):
            break
        if not line.startswith("| `"):
            continue
        names = re.findall(r"`([^`]+)`", line.split("|")[1])
        prefix = names[0].rsplit(".", 1)[0]
        keys |= {names[0], *(f"{prefix}.{n}" for n in names[1:])}
    return keys


def test_every_config_key_is_in_the_readme_table() -> None:
    documented = documented_keys()
    covered = {k for k in config_keys() if k in documented or any(
        d.endswith(".*") and k.startswith(d[:-1]) for d in documented)}
    assert sorted(config_keys() - covered) == []
    stale = {d for d in documented if not d.endswith(".*")} - config_keys()
    assert sorted(stale) == []
