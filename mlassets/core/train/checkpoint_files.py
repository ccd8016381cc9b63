"""Checkpoint directories on disk: fsynced JSON and the sha256 manifest that makes a checkpoint valid.

Light on purpose (no torch): the orchestrator verifies checkpoints before committing them to the store.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

MANIFEST = "MANIFEST.json"


def sha256_file(path: Path, sync: bool = False) -> str:
    """sha256 of a file; with ``sync`` the file is also flushed to disk (fsync)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
        if sync:
            os.fsync(fh.fileno())
    return digest.hexdigest()


def write_json(path: Path, doc: Any, sync: bool = False) -> None:
    """Compact JSON; the manifest fsyncs every file it vouches for, so ``sync`` is rarely needed here."""
    with path.open("w") as fh:
        fh.write(json.dumps(doc, sort_keys=True, separators=(",", ":")))  # C encoder; json.dump is slow
        if sync:
            fh.flush()
            os.fsync(fh.fileno())


def write_manifest(directory: Path, step: int) -> dict[str, Any]:
    """Hash (and fsync) every file of a checkpoint, then write ``MANIFEST.json``: the checkpoint is complete."""
    files = {p.name: {"sha256": sha256_file(p, sync=True), "size": p.stat().st_size}
             for p in sorted(directory.iterdir()) if p.is_file() and p.name != MANIFEST}
    manifest = {"format_version": 1, "step": step, "files": files}
    write_json(directory / MANIFEST, manifest, sync=True)
    return manifest


def verify(directory: Path) -> dict[str, Any]:
    """Check that the files of a checkpoint are exactly those of its manifest; ``ValueError`` if not."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{MANIFEST} missing or unreadable ({exc.__class__.__name__})") from None
    present = {p.name for p in directory.iterdir() if p.is_file() and p.name != MANIFEST}
    if present != set(files):
        raise ValueError(f"files differ from {MANIFEST}: missing {sorted(set(files) - present)}, "
                         f"unlisted {sorted(present - set(files))}")
    for name, entry in files.items():
        path = directory / name
        if path.stat().st_size != entry.get("size") or sha256_file(path) != entry.get("sha256"):
            raise ValueError(f"{name} does not match its {MANIFEST} checksum (truncated or corrupted)")
    return manifest
