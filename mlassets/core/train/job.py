"""The job file a training process reads (config, data paths, output directory, data version), and the command that
runs it."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass
class TrainJob:
    """Everything a training process needs, as one JSON file."""

    config: dict[str, Any]  # PipelineConfig.to_dict()
    train_path: str
    validation_path: str
    out_dir: str
    data_version: str
    init_bundle: str = ""  # a warm start: the model bundle (folder) whose weights the network begins from
    warm_start_from: str = ""  # ... and which registered version that is, as recorded ("" for a full retrain)
    force_budget: bool = False  # run even when its expected cost is over training.budget_hours (``--force``)

    @classmethod
    def from_json(cls, path: str | Path) -> TrainJob:
        data = json.loads(Path(path).read_text())
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"job file {path}: {exc}") from exc

    def to_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        return path


def train_command(nproc: int, job_path: Path, torchrun: bool = False) -> list[str]:
    """The command that trains ``job_path``: one plain process, or torchrun with ``nproc`` local ranks.

    ``torchrun=True`` launches one rank through torchrun too: it then joins a process group (DDP or FSDP
    over NCCL on one GPU) instead of training as a plain process.

    torchrun never restarts ranks (``--max-restarts=0``): the orchestrator's retry policy restarts the
    whole step, where every restart is visible, and the new attempt resumes from the newest checkpoint.
    """
    if nproc <= 1 and not torchrun:
        return [sys.executable, "-m", "mlassets.core.train", "--job", str(job_path)]
    script = Path(sys.executable).with_name("torchrun")
    launcher = [str(script)] if script.is_file() else [sys.executable, "-m", "torch.distributed.run"]
    return [*launcher, "--standalone", "--nnodes=1", f"--nproc-per-node={nproc}", "--max-restarts=0",
            "-m", "mlassets.core.train", "--job", str(job_path)]
