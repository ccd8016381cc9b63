"""Checkpoint directories on disk: fsynced JSON and the sha256 manifest that makes a checkpoint valid.

Light on purpose (no torch): the orchestrator verifies checkpoints before committing them to the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

MANIFEST = "MANIFEST.json"
PREFIX = "step-"  # a finalized checkpoint is <root>/step-<9-digit step>; it is written as .tmp-step-<step>
# Settings that change how a run is watched or interrupted, never its numbers: a resumed run may differ in them.
NOT_NUMERIC = ("faults", "checkpoint_every_steps", "checkpoint_every_minutes", "keep_last", "async_checkpoint",
               "collective_timeout_s", "telemetry_every_steps", "retries", "profile")


def resume_key(config: dict[str, Any], data_version: str, world_size: int,
               numeric: tuple[str, ...] = ()) -> str:
    """Checkpoints are reused only by a run with this key (same numbers-relevant config, data, world size).

    ``numeric``: training settings that are numbers-relevant for this family after all (the boosted trees reseed
    at every checkpoint, so their ``checkpoint_every_steps`` is).
    """
    training = {k: v for k, v in config["training"].items() if k not in NOT_NUMERIC or k in numeric}
    doc = {**config, "training": training, "data_version": data_version, "world_size": world_size}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def next_attempt(out_dir: Path) -> int:
    """This attempt's number in ``out_dir`` (1 for the first), counted in ``<out_dir>/attempts``."""
    path = out_dir / "attempts"
    attempt = int(path.read_text()) + 1 if path.is_file() else 1
    path.write_text(str(attempt))
    return attempt


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


def publish(tmp: Path, final: Path) -> Path:
    """Move a written checkpoint folder into place atomically (the same checkpoint saved again after a resume
    replaces the old one) and fsync the parent folder, so a crash leaves either no checkpoint or a whole one."""
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    fd = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return final


def retain(root: Path, keep_last: int, best: Path | None) -> None:
    """Delete every checkpoint under ``root`` but the newest ``keep_last`` and ``best``."""
    dirs = step_dirs(root)
    keep = {*dirs[:keep_last], *([best] if best is not None else [])}
    for path in dirs:
        if path not in keep:
            shutil.rmtree(path, ignore_errors=True)


def step_dirs(root: Path) -> list[Path]:
    """Finalized checkpoints, newest first."""
    return sorted((p for p in root.glob(f"{PREFIX}*") if p.is_dir()), key=lambda p: p.name, reverse=True)


def set_aside(path: Path, why: str) -> None:
    """Rename a checkpoint out of the ``step-*`` namespace (kept for inspection, never loaded)."""
    target = path.with_name(f".{why}-{path.name}")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(path, target)
