"""Deliveries dropped into a landing folder: one file (``<partition key>.csv``, ``.tsv``, ``.parquet``) or one
folder (``<partition key>/``) per partition, each with a fingerprint of its content.

Hidden names and names ending in ``.tmp`` or ``.part`` are never deliveries (a copy in progress); a name
that is not a valid partition key is listed once as ignored, with the reason.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from mlassets.core.config.rules import check_key

SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")
IN_PROGRESS = (".tmp", ".part", ".crdownload")


@dataclass(frozen=True)
class Delivery:
    key: str
    path: str
    fingerprint: str  # sha256 of the content (a folder: of its files' names and bytes)


@dataclass(frozen=True)
class Ignored:
    name: str
    reason: str


def _fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode() + b"\0")
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _key(entry: Path) -> str | None:
    if entry.is_dir():
        return entry.name
    lower = entry.name.lower()
    suffix = next((s for s in SUFFIXES if lower.endswith(s)), None)
    return entry.name[: -len(suffix)] if suffix else None


def scan(folder: str | Path, pattern: str) -> tuple[list[Delivery], list[Ignored]]:
    """Every delivery in ``folder`` (sorted by key) and every entry that is not one, with why."""
    root = Path(folder)
    if not root.is_dir():
        return [], []
    found: list[Delivery] = []
    ignored: list[Ignored] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.name.lower().endswith(IN_PROGRESS):
            continue
        key = _key(entry)
        if key is None:
            ignored.append(Ignored(entry.name, f"not a delivery (a folder, or a file ending {', '.join(SUFFIXES)})"))
            continue
        try:
            check_key(pattern, key, f"landing {entry.name!r}")
        except ValueError as exc:
            ignored.append(Ignored(entry.name, str(exc)))
            continue
        found.append(Delivery(key, str(entry), _fingerprint(entry)))
    return sorted(found, key=lambda d: d.key), ignored
