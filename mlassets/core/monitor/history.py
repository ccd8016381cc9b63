"""The decay points of a dataset, read from the records its assets stored and the store's data versions.

Which data version a model was trained on comes from the ``registered_model`` records; its metric at age 0 from
the evaluation of that version (where it was the candidate); later points from every evaluation that scored it as
the champion. Ages in days come from the features manifests (the newest local day of each version); without a
time column, from the watched branch's history (versions later).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache

import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import derived_repo, raw_repo
from mlassets.core.data.store import VersionedStore
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.features.store import BRANCH, read_manifest
from mlassets.core.metric_defs import get_metric
from mlassets.core.monitor.decay import DecayPoint, DecayReport, decay_report, point
from mlassets.core.records import RecordFiles
from mlassets.core.registry.record import RegisteredVersion


def stored(files: RecordFiles, key: Sequence[str]) -> dict[str, object]:
    """Every record of an asset, by partition (an asset without records gives an empty dict)."""
    folder = files.root.joinpath(*key)
    names = sorted(p.stem for p in folder.glob("*.json") if not p.name.startswith(".")) if folder.is_dir() else []
    return {name: files.read(key, name) for name in names}


def age_unit(cfg: PipelineConfig) -> str:
    return "days" if cfg.features.split == "time" and cfg.dataset.time_column else "versions"


class Ages:
    """The age of a model's data version at a later one: days between their newest days, or commits between."""

    def __init__(self, store: VersionedStore, cfg: PipelineConfig) -> None:
        self.store, self.cfg, self.unit = store, cfg, age_unit(cfg)
        self.newest = cache(self._newest)

    def _newest(self, version: str) -> pd.Timestamp:
        repo = derived_repo(self.cfg)
        days = []
        for entry in read_manifest(self.store, self.cfg, version)["partitions"]:
            info = json.loads(self.store.read(repo, BRANCH, entry["path"].removesuffix(".parquet") + ".json"))
            days.extend(info.get("days", {}))
        return pd.Timestamp(max(days))

    def __call__(self, model_version: str, later: str) -> float | None:
        if self.unit == "days":
            return float((self.newest(later) - self.newest(model_version)).days)
        ids = [c.id for c in self.store.log(raw_repo(self.cfg), later)]
        return float(ids.index(model_version)) if model_version in ids else None  # not an ancestor: no age


def decay_points(files: RecordFiles, ages: Ages, cfg: PipelineConfig, evaluation_key: Sequence[str],
                 registered_key: Sequence[str]) -> list[DecayPoint]:
    """One point per evaluation of a champion, and each model's own evaluation (age 0)."""
    metric, tolerance = cfg.gate.main_metric, cfg.monitoring.decay_tolerance
    higher = get_metric(metric).higher_is_better
    evaluations = {r.data_version or k: r for k, r in stored(files, evaluation_key).items()  # by commit, not key
                   if isinstance(r, Evaluation)}
    trained_on = {r.version: r.record.data_commit for r in stored(files, registered_key).values()
                  if isinstance(r, RegisteredVersion)}
    points = []
    for model, own in trained_on.items():
        first = evaluations.get(own)
        base = first.candidate.get(metric) if first else None
        if base is None:
            continue
        points.append(point(model, own, own, 0.0, base, base, tolerance, higher))
        for version, ev in evaluations.items():
            if version == own or ev.champion_version != model or metric not in (ev.champion or {}):
                continue
            age = ages(own, version)
            if age is not None and age >= 0:
                points.append(point(model, own, version, age, ev.champion[metric], base, tolerance, higher))
    return points


def dataset_decay(files: RecordFiles, store: VersionedStore, cfg: PipelineConfig, evaluation_key: Sequence[str],
                  registered_key: Sequence[str]) -> DecayReport:
    """The decay report of a dataset from its stored evaluation and registration records."""
    ages = Ages(store, cfg)
    points = decay_points(files, ages, cfg, evaluation_key, registered_key)
    return decay_report(points, cfg.gate.main_metric, ages.unit, cfg.monitoring.decay_tolerance)
