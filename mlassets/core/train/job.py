"""The job file a training process reads: config, data paths, output directory, data version."""

from __future__ import annotations

import json
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
