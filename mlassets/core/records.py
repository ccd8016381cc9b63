"""Typed records that stages hand each other: one dataclass per record, one JSON path and one tags path.

A record's fields are its schema, written once: ``to_dict``/``from_dict`` (and the JSON and MLflow-tag forms
built on them) read the field list of the dataclass, so no key list of a record exists anywhere else.
``from_dict`` is strict (unknown keys and wrong types name the field) and ``from_tags`` parses the string
values MLflow keeps back into their types. ``RecordFiles`` keeps one JSON file per (asset, partition): the
Dagster IO manager and every reader outside a run (the demo, the CLI) share it.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
import tempfile
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

from mlassets.core.config.typed import ConfigError, build


class RecordError(ValueError):
    """A record could not be read: missing or mistyped field, unknown kind, unreadable file."""


class Record:
    """Mixin for frozen dataclasses that cross a stage boundary."""

    flat_in_tags: ClassVar[bool] = True  # nested in another record's tags: its fields join them (else one JSON tag)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        try:
            return build(cls, dict(data), cls.__name__, allow_nan=True)
        except ConfigError as exc:
            raise RecordError(str(exc)) from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Self:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RecordError(f"{cls.__name__}: not JSON ({exc})") from None
        return cls.from_dict(data)

    def to_tags(self) -> dict[str, str]:
        """Every field as a string: scalars as text (booleans ``true``/``false``), lists and mappings as JSON;
        a nested record's fields join the same flat set of tags. A text field left at its empty default makes no
        tag (``from_tags`` gives the default back)."""
        tags: dict[str, str] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, Record) and value.flat_in_tags:
                tags.update(value.to_tags())
            elif value is not None and not _empty_default(f, value):  # an empty default: no empty tag
                tags[f.name] = _tag(_plain(value))
        return tags

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> Self:
        """Parse the fields back from their tag strings; tags that are not fields are ignored."""
        hints = typing.get_type_hints(cls)
        data: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            tp = hints[f.name]
            if isinstance(tp, type) and issubclass(tp, Record) and tp.flat_in_tags:
                data[f.name] = tp.from_tags(tags).to_dict()
            elif f.name in tags:
                data[f.name] = _untag(tp, tags[f.name], f"{cls.__name__}.{f.name}")
        return cls.from_dict(data)


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def _tag(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, sort_keys=True)


def _untag(tp: Any, text: str, where: str) -> Any:
    optional = typing.get_origin(tp) in (typing.Union, types.UnionType)
    target = next(a for a in typing.get_args(tp) if a is not type(None)) if optional else tp
    if text == "None" and type(None) in typing.get_args(tp):
        return None
    try:
        if target is str:
            return text
        if target is bool:
            if text not in ("true", "false"):
                raise ValueError(f"expected true/false, got {text!r}")
            return text == "true"
        if target is int:
            return int(text)
        if target is float:
            return float(text)
        return json.loads(text)
    except ValueError as exc:
        raise RecordError(f"{where}: tag value {text[:80]!r} does not parse ({exc})") from None


# ------------------------------------------------------------------ one JSON file per asset and partition

_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.=\-]{0,254}$")


def kind_of(record: Record) -> str:
    return f"{type(record).__module__}:{type(record).__qualname__}"


def record_class(kind: str) -> type[Record]:
    """The record class a stored ``kind`` names; only mlassets classes that are records."""
    module, _, name = kind.partition(":")
    if not module.startswith("mlassets.") or not name.isidentifier():
        raise RecordError(f"record kind {kind!r} is not an mlassets record")
    cls = getattr(importlib.import_module(module), name, None)
    if not (isinstance(cls, type) and issubclass(cls, Record)):
        raise RecordError(f"record kind {kind!r} is not an mlassets record")
    return cls


def _empty_default(f: dataclasses.Field, value: Any) -> bool:
    """A field left at an empty default (``""``, or an empty list or mapping): ``from_tags`` gives it back unasked."""
    if value == "" and f.default == "":
        return True
    factory = f.default_factory
    return value in ([], {}) and factory is not dataclasses.MISSING and factory() == value


class RecordFiles:
    """``<root>/<asset key path>/<partition>.json`` holding ``{"kind": ..., "record": {...}}``, written atomically."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, key: Sequence[str], partition: str | None) -> Path:
        parts = [*key, partition or "_unpartitioned"]
        for part in parts:
            if not _SEGMENT.fullmatch(part) or part in (".", ".."):
                raise RecordError(f"record path segment {part!r}: letters, digits, '_', '-', '.' and '=' only")
        return self.root.joinpath(*parts[:-1], f"{parts[-1]}.json")

    def write(self, key: Sequence[str], partition: str | None, record: Record) -> Path:
        path = self.path(key, partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = json.dumps({"kind": kind_of(record), "record": record.to_dict()}, sort_keys=True, indent=1)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w") as fh:
            fh.write(doc)
        os.replace(tmp, path)
        return path

    def read(self, key: Sequence[str], partition: str | None, cls: type[Record] | None = None) -> Record:
        try:
            return read_record_file(self.path(key, partition), cls)
        except FileNotFoundError:
            raise RecordError(f"no record of {'/'.join(key)} for partition {partition}") from None

    def exists(self, key: Sequence[str], partition: str | None) -> bool:
        return self.path(key, partition).is_file()


def read_record_file(path: str | Path, cls: type[Record] | None = None) -> Record:
    """A file ``RecordFiles.write`` wrote (a path that metadata names), as ``cls`` or the class its kind names."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        raise RecordError(f"{path}: unreadable record ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("record"), dict):
        raise RecordError(f"{path}: not a record file")
    cls = cls or record_class(str(doc.get("kind", "")))
    return cls.from_dict(doc["record"])
