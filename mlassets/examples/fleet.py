"""The fleet walk-through (docs/tutorials/sharing-gpus.md): a demo ``fleet.yaml`` (the shipped one with a 10-second
lease, so a frozen rank is seen losing it) and small training job files on synthetic flights-like data: a
slowed-down ``batch`` run to be preempted, its ``reference`` (the same run, trained alone, for the weights), an
``urgent`` run, and ``frozen``."""

from __future__ import annotations

from pathlib import Path

import yaml

from mlassets.core.fleet.config import SHIPPED
from mlassets.core.train.job import TrainJob
from mlassets.core.train.synthetic import tiny_config, write_splits

JOBS = {  # name: (training overrides, fleet section)
    "batch": ({"epochs": 3, "faults": {"slow_loader_ms": 150}}, {"team": "research", "capacity": "spot"}),
    "reference": ({"epochs": 3}, {"team": "research"}),
    "urgent": ({"epochs": 1}, {"team": "product", "priority": "urgent", "capacity": "spot", "preemptible": False}),
    "frozen": ({"epochs": 3, "faults": {"slow_loader_ms": 150}}, {"team": "research", "capacity": "on-demand"}),
}


def write_fleet_example(out: Path) -> list[Path]:
    """Write ``out/fleet.yaml``, ``out/data`` and ``out/<job>/job.json``; return the job files."""
    out.mkdir(parents=True, exist_ok=True)
    fleet = yaml.safe_load(SHIPPED.read_text())
    fleet.update({"lease": {"seconds": 10, "heartbeat_s": 1, "startup_s": 120}, "grace_s": 30})
    (out / "fleet.yaml").write_text(yaml.safe_dump(fleet, sort_keys=False, allow_unicode=True))
    train, val = write_splits(out / "data", 2000, 400)
    paths = []
    for name, (training, section) in JOBS.items():
        config = tiny_config(**{"nproc": 2 if name in ("batch", "reference") else 1, "checkpoint_every_steps": 4,
                                **training})
        config["fleet"] = {**(config.get("fleet") or {}), "expected_minutes": 10.0, **section}
        paths.append(TrainJob(config, str(train), str(val), str(out / name), "demo").to_json(
            _mkdir(out / name) / "job.json"))
    return paths


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
