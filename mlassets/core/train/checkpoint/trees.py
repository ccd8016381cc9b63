"""Checkpoints of a boosted-trees run: the model so far, the scores its next chunk starts from, the progress.

``step-<round>/`` holds the library's native model file (``model.txt``, ``model.ubj``), the carried score arrays as
``.npy`` (read with ``allow_pickle=False``), ``meta.json`` and a ``MANIFEST.json`` of sha256 sums, the same
layout rule as the torch checkpoints (``checkpoint.files``), so the training asset verifies and commits them alike.
A checkpoint is written as ``.tmp-step-<round>/`` and renamed when complete; nothing in it depends on the clock, so
a resumed run's checkpoints are byte-identical to an unkilled run's.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mlassets.core.train.checkpoint.files import (
    PREFIX,
    publish,
    retain,
    set_aside,
    step_dirs,
    verify,
    write_json,
    write_manifest,
)

META = "meta.json"


@dataclass
class Progress:
    """Where a run is: rounds done, the validation metric per round, the best round, the model and scores so far."""

    round: int = 0
    curves: list[dict[str, float]] = field(default_factory=list)
    best_round: int = 0
    best_metric: float = math.inf
    finished: bool = False
    model: bytes | None = None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


class TreeCheckpoints:
    """The checkpoints of one run in ``root``: the newest ``keep_last`` plus the one holding the best round."""

    def __init__(self, root: Path, model_file: str, key: str, keep_last: int, log: Callable[[str], None],
                 delay_s: float = 0.0) -> None:
        self.root, self.model_file, self.key, self.keep_last, self.log = root, model_file, key, keep_last, log
        self.delay_s = delay_s  # the slow-checkpoint fault
        self.root.mkdir(parents=True, exist_ok=True)

    def save(self, progress: Progress, val_metric: float, before_commit: Callable[[], None] | None = None) -> Path:
        """Write the checkpoint of ``progress``; ``before_commit`` runs when its files are complete, before it is
        renamed into place (what must be on disk whenever the checkpoint is)."""
        if progress.model is None:
            raise ValueError("a checkpoint needs a model")
        time.sleep(self.delay_s)
        name = f"{PREFIX}{progress.round:09d}"
        tmp = self.root / f".tmp-{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        (tmp / self.model_file).write_bytes(progress.model)
        for array, values in progress.arrays.items():
            np.save(tmp / f"{array}.npy", values, allow_pickle=False)
        write_json(tmp / META, {"step": progress.round, "epoch": progress.round, "val_metric": val_metric,
                                "best_round": progress.best_round, "best_metric": progress.best_metric,
                                "finished": progress.finished, "curves": progress.curves, "resume_key": self.key})
        write_manifest(tmp, progress.round)
        if before_commit is not None:
            before_commit()
        final = publish(tmp, self.root / name)
        self._retain(progress.best_round)
        return final

    def _retain(self, best_round: int) -> None:
        retain(self.root, self.keep_last, self.holding(best_round))

    def holding(self, best_round: int) -> Path | None:
        """The earliest checkpoint whose model holds ``best_round`` (the best model is its first rounds)."""
        held = [p for p in step_dirs(self.root) if _step(p) >= best_round]
        return held[-1] if held else None

    def resume(self, carried: tuple[str, ...]) -> Progress | None:
        """The progress of the newest valid checkpoint of this run (same resume key), or None."""
        for tmp in self.root.glob(f".tmp-{PREFIX}*"):
            self.log(f"removing unfinished checkpoint {tmp.name} (the run died while writing it)")
            shutil.rmtree(tmp, ignore_errors=True)
        for path in step_dirs(self.root):
            try:
                verify(path)
                meta = json.loads((path / META).read_text())
                if meta.get("resume_key") != self.key:
                    self.log(f"checkpoint {path.name} belongs to another config; not resuming from it")
                    set_aside(path, "stale")
                    continue
                arrays = {name: np.load(path / f"{name}.npy", allow_pickle=False) for name in carried}
                return Progress(round=int(meta["step"]), curves=list(meta["curves"]),
                                best_round=int(meta["best_round"]), best_metric=float(meta["best_metric"]),
                                finished=bool(meta["finished"]), model=(path / self.model_file).read_bytes(),
                                arrays=arrays)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self.log(f"checkpoint {path.name} is not valid ({exc}); falling back to the previous one")
                set_aside(path, "corrupt")
        return None

    def listing(self) -> list[dict[str, Any]]:
        """Finalized checkpoints, oldest first: name, step, epoch (= round), validation metric, path."""
        out = []
        for path in reversed(step_dirs(self.root)):
            meta = json.loads((path / META).read_text())
            out.append({"name": path.name, "step": meta["step"], "epoch": meta["epoch"],
                        "val_metric": meta["val_metric"], "path": str(path.resolve())})
        return out


def _step(path: Path) -> int:
    return int(path.name[len(PREFIX):])
