"""What a study hands on: ``TunedHparams`` (its best values on the validation split, and how it got them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mlassets.core import paths
from mlassets.core.records import Record, RecordFiles


@dataclass(frozen=True, kw_only=True)
class TrialRow(Record):
    """One trial of the study, as the record lists it."""

    number: int
    state: str  # COMPLETE, PRUNED, FAIL (or RUNNING: a trial of a run that died)
    value: float | None  # its best validation metric over its epochs (complete trials only)
    epochs: int  # epochs it reported (a pruned trial: fewer than the study's)
    last: float | None  # the validation metric of its last reported epoch (what a pruned trial was judged on)
    values: dict[str, float]


@dataclass(frozen=True, kw_only=True)
class TunedHparams(Record):
    """The best values of a study over ``params``, chosen by the validation metric (never the holdout)."""

    dataset: str
    study_name: str
    storage_kind: str  # sqlite, postgresql, mysql, ...
    storage: str  # where the study is kept, any password masked
    data_version: str  # the features its trials trained and validated on
    config_hash: str  # of the config the study ran with
    params: list[str]
    values: dict[str, float]  # the best trial's values (integers for batch_size and embedding_dim)
    metric: str  # the validation metric, lower is better: mae (regression) or logloss (binary)
    best_value: float
    best_trial: int
    trials_complete: int
    trials_pruned: int
    trials_failed: int
    trials_run: int  # by the run that wrote this record (the study may hold more)
    mlflow_run_id: str  # the parent run; each trial is a nested run under it
    seconds: float
    created_at: str  # ISO time, UTC
    trials: list[TrialRow] = field(default_factory=list)


def newest(key: Sequence[str]) -> TunedHparams | None:
    """The newest ``TunedHparams`` the tuning asset (``key``) wrote, or None when it has not run yet."""
    files = RecordFiles(paths.records_root())
    return files.read(key, None, TunedHparams) if files.exists(key, None) else None  # type: ignore[return-value]
