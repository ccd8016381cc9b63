"""The working area of training runs: what a finished run leaves behind, and what may be freed.

Each training step exports the version's train and validation splits beside its job
(``work/<dataset>/train/<version>/<run>/data/``), a full copy of the split. Nothing needs them once the step's
training process has ended: a retry or a re-execution exports them again (``launch.prepare_job``), resumes from the
checkpoints beside them, and a rebuild reads the store. So a step that finished removes them, and its working
checkpoints too once the final and the best are committed to the store (``finished``); ``mlassets prune`` frees the
splits that a killed or failed step left (its checkpoints stay: a re-execution resumes from them). The model bundle,
result and telemetry stay (the dashboard, ``mlassets diagnose``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

SPLITS_DIR = "data"  # the exported splits, beside job.json
CHECKPOINTS_DIR = "checkpoints"  # the working checkpoints (final and best are committed to the store)


@dataclass(frozen=True)
class WorkFiles:
    """A run's exported splits in the working area."""

    path: Path
    dataset: str
    data_version: str  # the first 16 characters, as the folder is named
    run_key: str  # the first 8 characters of the run's root run id
    size: int  # bytes


def size_of(path: Path) -> int:
    """Bytes of the files under ``path`` (links not followed)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def exported_splits(work: Path) -> list[WorkFiles]:
    """Every run's exported splits under the working area ``work`` (``$MLASSETS_HOME/work``), oldest first."""
    found = [WorkFiles(path, path.parents[3].name, path.parents[1].name, path.parent.name, size_of(path))
             for path in work.glob(f"*/train/*/*/{SPLITS_DIR}") if path.is_dir() and not path.is_symlink()]
    return sorted(found, key=lambda w: (w.path.stat().st_mtime, str(w.path)))


def remove_splits(run_dir: Path) -> int:
    """Remove a finished run's exported splits; the bytes freed (0: there were none)."""
    path = run_dir / SPLITS_DIR
    if not path.is_dir():
        return 0
    size = size_of(path)
    shutil.rmtree(path)
    return size


def finished(run_dir: Path) -> int:
    """What a training step that finished (its checkpoints committed) leaves that nothing needs: its exported splits
    and working checkpoints, removed; the bytes freed."""
    freed = remove_splits(run_dir)
    checkpoints = run_dir / CHECKPOINTS_DIR
    if checkpoints.is_dir():
        freed += size_of(checkpoints)
        shutil.rmtree(checkpoints)
    return freed
