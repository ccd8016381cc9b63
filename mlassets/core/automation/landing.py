"""Deliveries dropped into a landing folder: one file (``<partition key>.csv``, ``.tsv``, ``.parquet``) or one
folder (``<partition key>/``) per partition, each with a stamp (size and mtime of its files) and, once read, a
fingerprint of its content.

Hidden names and names ending in ``.tmp``, ``.part``, ``.partial`` or ``.crdownload`` are never deliveries (a
copy in progress); a name that is not a valid partition key is listed once as ignored, with the reason. What is
not a plain file inside the folder is refused without being opened, naming its path: a link that leaves the
folder, a FIFO, a device or a socket, and a delivery above the size limit (``automation.landing_max_mb``).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mlassets.core.config.checks import check_key

SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")
IN_PROGRESS = (".tmp", ".part", ".partial", ".crdownload")


@dataclass(frozen=True)
class Delivery:
    key: str
    path: str
    stamp: str  # the size and mtime of each of its files: unchanged across the settle interval means whole


@dataclass(frozen=True)
class Ignored:
    name: str
    reason: str


class Refused(ValueError):
    """An entry of the landing folder that is never opened (its path and why)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _checked(path: Path, root: Path) -> os.stat_result:
    """The stat of a plain file or folder inside ``root`` (a link is followed only when it stays inside)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        target = path.resolve()
        if not target.is_relative_to(root):
            raise Refused(f"{path} is a link that leaves the landing folder {root}; refused (deliver the file itself)")
        info = os.stat(path)
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise Refused(f"{path} is {_kind(info.st_mode)}, not a file; refused")
    return info


def _files(path: Path, root: Path) -> list[tuple[Path, os.stat_result]]:
    """A delivery's plain files (itself, or a folder's, sorted), each checked; a refused one refuses it all."""
    info = _checked(path, root)
    if not stat.S_ISDIR(info.st_mode):
        return [(path, info)]
    out: list[tuple[Path, os.stat_result]] = []
    for folder, dirs, names in os.walk(path, followlinks=False):
        for name in sorted(dirs):
            if Path(folder, name).is_symlink():
                _checked(Path(folder, name), root)
                raise Refused(f"{Path(folder, name)} is a link to a folder inside a delivery; refused")
        for name in sorted(names):
            file = Path(folder, name)
            out.append((file, _checked(file, root)))
    return sorted(out)


def fingerprint(path: str | Path) -> str:
    """sha256 of a delivery's content (a folder: of its files' names and bytes)."""
    root, digest = Path(path), hashlib.sha256()
    files = [f for f, _ in _files(root, root.parent.resolve())]
    for file in files:
        digest.update(str(file.relative_to(root) if file != root else file.name).encode() + b"\0")
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def stamp(path: str | Path, root: Path, max_bytes: int) -> str:
    """The size and mtime of each of a delivery's files (refused above ``max_bytes`` in all)."""
    files = _files(Path(path), root)
    total = sum(info.st_size for _, info in files)
    if total > max_bytes:
        raise Refused(f"{path} holds {total} bytes, above automation.landing_max_mb "
                      f"({max_bytes // (1 << 20)} MB); refused")
    digest = hashlib.sha256()
    for file, info in files:
        digest.update(f"{file}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _key(entry: Path, is_dir: bool) -> str | None:
    if is_dir:
        return entry.name
    lower = entry.name.lower()
    suffix = next((s for s in SUFFIXES if lower.endswith(s)), None)
    return entry.name[: -len(suffix)] if suffix else None


def scan(folder: str | Path, pattern: str, max_mb: int = 10_240) -> tuple[list[Delivery], list[Ignored]]:
    """Every delivery in ``folder`` (sorted by key) and every entry that is not one, with why."""
    root = Path(folder)
    if not root.is_dir():
        return [], []
    root = root.resolve()
    found: list[Delivery] = []
    ignored: list[Ignored] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.name.lower().endswith(IN_PROGRESS):
            continue
        try:
            is_dir = stat.S_ISDIR(_checked(entry, root).st_mode)
            key = _key(entry, is_dir)
            if key is None:
                ignored.append(Ignored(entry.name, f"not a delivery (a folder, or a file ending "
                                                   f"{', '.join(SUFFIXES)})"))
                continue
            check_key(pattern, key, f"landing {entry.name!r}")
            found.append(Delivery(key, str(entry), stamp(entry, root, max_mb << 20)))
        except (ValueError, OSError) as exc:  # Refused is a ValueError; a file gone meanwhile: seen next time
            if not isinstance(exc, FileNotFoundError):
                ignored.append(Ignored(entry.name, str(exc)))
    return sorted(found, key=lambda d: d.key), ignored


@contextmanager
def read_unchanged(path: str | Path, expected: str = "", key: str = "KEY") -> Iterator[None]:
    """Guard an ingest's read of a delivered file or folder: refused (``Refused``, before anything is written) when
    its content is no longer the one the landing sensor found whole (``expected``: its fingerprint then), or when it
    changes while the body reads it (its stamp before and after)."""
    shown = Path(path)
    delivered = shown if expected else shown.resolve()  # as the sensor saw it; a link given to --from: its file
    root = delivered.parent.resolve()
    before = stamp(delivered, root, sys.maxsize)
    if expected:
        now = fingerprint(delivered)
        if now != expected:
            raise Refused(f"{shown} changed after the landing sensor found it whole (sha256 {expected[:12]}... "
                          f"then, {now[:12]}... now); not ingested: a delivery rewritten in place is a new version "
                          f"only when you say so (mlassets ingest --config ... --partition {key} --from {shown})")
    yield
    if stamp(delivered, root, sys.maxsize) != before:
        raise Refused(f"{shown} changed while it was read (its size or mtime moved); not ingested: deliver a "
                      "finished copy by renaming it into place")
