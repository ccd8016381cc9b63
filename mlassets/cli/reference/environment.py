"""Environment variables, from the one table in ``mlassets.core.env_vars``."""

from __future__ import annotations

from mlassets.cli.reference.markdown import code, page, table
from mlassets.core.env_vars import KINDS, VARIABLES

INTRO = """Every variable mlassets reads or sets. Credentials come from the environment only and are never logged:
`mlassets doctor` masks any value whose variable name holds `PASSWORD`, `SECRET`, `TOKEN`, `PRIVATE` or
`CREDENTIAL`, and passwords inside URLs."""


def render() -> str:
    sections = []
    for kind, title in KINDS.items():
        rows = [(code(v.name), v.default, v.meaning) for v in VARIABLES if v.kind == kind]
        sections.append(f"## {title}\n\n" + table(("variable", "unset", "meaning"), rows))
    return page("Environment variables", INTRO, *sections)
