"""Every key of a dataset config with its type, default and meaning, read from the config dataclasses.

A field's meaning is the string literal right below it in the class body (an attribute docstring); its type and
default come from the dataclass itself, so the page cannot state a default the code does not have.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
import typing
from typing import Any, Literal

from mlassets.cli.reference.markdown import code, page, table
from mlassets.core.config import PipelineConfig

SECTIONS_INTRO = """A dataset is one YAML file. Unknown keys and wrong types fail at load, naming the key and the
value; so does every rule across keys. Keys written `<c>` or `<t>` stand for a column or a table name."""


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a dataclass: the string statement right after each annotated field."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for here, after in zip(body, body[1:], strict=False):
        if (isinstance(here, ast.AnnAssign) and isinstance(here.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[here.target.id] = " ".join(after.value.value.split())
    return docs


def type_text(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return "one of " + ", ".join(code(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        text = " or ".join(type_text(a) for a in inner)
        return f"{text}, or unset" if type(None) in args else text
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        return f"mapping of {type_text(args[1])}"
    names = {int: "integer", float: "number", str: "string", bool: "true/false", Any: "any"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def default_text(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, str):
        return code(value) if value else '`""`'
    if isinstance(value, list | tuple):
        return code("[" + ", ".join(repr(v) if isinstance(v, str) else str(v) for v in value) + "]")
    if isinstance(value, dict):
        return code("{}") if not value else code(value)
    return code(value)


def keys(cls: type = PipelineConfig, prefix: str = "", seen: dict[type, str] | None = None
         ) -> list[tuple[str, str, str, str]]:
    """``(key path, type, default, meaning)`` of every leaf key. A section met again (a table's columns) is one
    row pointing at where its keys were listed."""
    seen = {} if seen is None else seen
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    rows: list[tuple[str, str, str, str]] = []
    for f in dataclasses.fields(cls):
        path, tp = f"{prefix}{f.name}", hints[f.name]
        section = _section_of(tp)
        if section is not None and section not in seen:
            named = typing.get_origin(tp) is dict
            inner = f"{path}.<{'t' if f.name == 'tables' else 'c'}>." if named else f"{path}."
            seen[section] = inner
            rows += keys(section, inner, seen)
            continue
        if f.name not in docs:
            raise ValueError(f"{cls.__name__}.{f.name} ({path}) has no docstring: write its meaning on the line "
                             "below the field")
        kind = f"mapping of sections, keys as `{seen[section]}*`" if section is not None else type_text(tp)
        rows.append((path, kind, default_text(f), docs[f.name]))
    return rows


def section_doc(cls: type) -> str:
    """A section class's own docstring (none when the dataclass has only its generated signature)."""
    doc = cls.__dict__.get("__doc__") or ""
    return "" if doc.startswith(f"{cls.__name__}(") else " ".join(doc.split())


def _section_of(tp: Any) -> type | None:
    """The dataclass a field opens (a section, an optional section, or a mapping of named sections), else None."""
    if dataclasses.is_dataclass(tp):
        return tp  # type: ignore[return-value]
    if _optional_section(tp):
        return next(a for a in typing.get_args(tp) if a is not type(None))
    if typing.get_origin(tp) is dict and dataclasses.is_dataclass(typing.get_args(tp)[1]):
        return typing.get_args(tp)[1]
    return None


def _optional_section(tp: Any) -> bool:
    """``Section | None``: a section a config may leave out (its field's docstring says what that means)."""
    args = typing.get_args(tp)
    return type(None) in args and len(args) == 2 and any(dataclasses.is_dataclass(a) for a in args)


def render() -> str:
    rows = keys()
    hints = typing.get_type_hints(PipelineConfig)
    docs = field_docs(PipelineConfig)
    sections = []
    for name in [f.name for f in dataclasses.fields(PipelineConfig)]:
        mine = [r for r in rows if r[0].split(".")[0] == name]
        section = _section_of(hints[name])
        intro = section_doc(section) if section is not None else ""
        if _optional_section(hints[name]):
            intro = " ".join(p for p in (intro, f"Optional. {docs.get(name, '')}") if p)
        sections.append(f"## `{name}`\n\n" + (f"{intro}\n\n" if intro else "") + table(
            ("key", "type", "default", "meaning"), [(code(k), t, d, m) for k, t, d, m in mine]))
    return page("Config keys", SECTIONS_INTRO, *sections)
