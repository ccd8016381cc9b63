"""An Optuna study of one data version: TPE proposes, each trial trains on the train split through the training
loop (one process, world size 1) and reports the validation metric after every epoch to a median pruner.

The holdout is never read. Each trial is an MLflow run nested under the study's parent run (the active run, e.g.
the Dagster run's, or one started here). The study lives in an RDB storage (sqlite in ``$MLASSETS_HOME`` by
default) under ``<dataset>-<hash>``, the hash of what its trials train on, so a second call resumes it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import warnings
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mlflow
import optuna

from mlassets.core import paths, settings, tracking
from mlassets.core.config import FaultConfig, PipelineConfig, ProfileConfig
from mlassets.core.config.families import facts_of
from mlassets.core.data.store import NotFound, VersionedStore
from mlassets.core.features.store import export_splits
from mlassets.core.train.family import family_of
from mlassets.core.train.objectives import VAL_METRIC
from mlassets.core.train.splits import Splits, read_splits
from mlassets.core.tune.record import TrialRow, TunedHparams
from mlassets.core.tune.space import SPACE, Param, epochs_of, suggest, trial_length, with_values

SPLITS = ("train", "validation")  # what a study reads; never the holdout
HEARTBEAT_S = 60  # a trial of a run that died is marked failed when the study next resumes


def study_name(cfg: PipelineConfig, data_version: str) -> str:
    """``<dataset>-<12 hex>``: changing the data or what a trial trains makes a new study; the searched values
    themselves, the number of trials, the seed, schedule and storage do not (the study resumes)."""
    data = cfg.to_dict()
    for name in cfg.tuning.params:
        section = SPACE[name].section
        (data["model"]["params"] if section == "params" else data[section]).pop(name, None)
    key = {k: data[k] for k in ("dataset", "features", "model", "training")}
    key.update(params=sorted(cfg.tuning.params), epochs=epochs_of(cfg), data_version=data_version)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
    return f"{cfg.dataset.name}-{digest[:12]}"


def storage_url(cfg: PipelineConfig) -> str:
    """``tuning.storage``, else ``$MLASSETS_OPTUNA_STORAGE``, else sqlite in ``$MLASSETS_HOME``."""
    return cfg.tuning.storage or paths.optuna_storage()


def storage_kind(url: str) -> str:
    """The database of an RDB URL (``postgresql+psycopg2://...`` -> ``postgresql``)."""
    return url.split("://", 1)[0].split("+", 1)[0] if "://" in url else "unknown"


def trial_config(cfg: PipelineConfig, values: Mapping[str, float]) -> PipelineConfig:
    """A trial's config: the values, the study's epochs, one rank, checkpoints kept small, no faults or profiling."""
    cfg = with_values(cfg, values)
    return dataclasses.replace(cfg, training=dataclasses.replace(
        cfg.training, epochs=epochs_of(cfg), nproc=1, async_checkpoint=False, keep_last=1, checkpoint_every_steps=0,
        checkpoint_every_minutes=0.0, telemetry_every_steps=0, faults=FaultConfig(), profile=ProfileConfig()))


def _objective(cfg: PipelineConfig, splits: Splits, work: Path, name: str, data_version: str,
               space: Mapping[str, Param]) -> Callable[[optuna.Trial], float]:
    metric = f"val_{VAL_METRIC[cfg.dataset.task]}"
    family = family_of(cfg.model.family)

    def objective(trial: optuna.Trial) -> float:
        values = suggest(trial, cfg.tuning.params, space)
        run = mlflow.start_run(run_name=f"{name} trial {trial.number}", nested=True,
                               tags={"optuna_study": name, "optuna_trial": str(trial.number),
                                     "data_commit": data_version})
        trial.set_user_attr("mlflow_run_id", run.info.run_id)
        mlflow.log_params(values)

        def report(step: int, value: float) -> None:  # each epoch (or rounds) to MLflow and the pruner
            mlflow.log_metric(metric, value, step=step)
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned(f"step {step}: {metric}={value:.4f} is worse than the median")

        state = "FAIL"
        try:
            best = family.fit_trial(trial_config(cfg, values), splits, work / f"trial-{trial.number}", data_version,
                                    report)
            mlflow.log_metric(f"best_{metric}", best)
            state = "COMPLETE"
            return best
        except optuna.TrialPruned:
            state = "PRUNED"
            raise
        finally:
            mlflow.set_tag("optuna_state", state)
            mlflow.end_run("FAILED" if state == "FAIL" else "FINISHED")

    return objective


def _row(trial: optuna.trial.FrozenTrial) -> TrialRow:
    reported = trial.intermediate_values
    return TrialRow(number=trial.number, state=trial.state.name, epochs=len(reported), values=dict(trial.params),
                    value=trial.value if trial.state == optuna.trial.TrialState.COMPLETE else None,
                    last=reported[max(reported)] if reported else None)


def run_study(cfg: PipelineConfig, train_path: str | Path, validation_path: str | Path, data_version: str,
              work_dir: Path, *, storage: str | None = None, trials: int | None = None,
              space: Mapping[str, Param] | None = None, log: Callable[[str], None] = print) -> TunedHparams:
    """Run ``trials`` (default ``tuning.trials``) more trials of the version's study on these splits."""
    started = time.perf_counter()
    url, name, n_trials = storage or storage_url(cfg), study_name(cfg, data_version), trials or cfg.tuning.trials
    data = read_splits(cfg, str(train_path), str(validation_path), None)  # once: trials change no preprocessing
    space = space if space is not None else family_of(cfg.model.family).search_space(cfg)
    unknown = [p for p in cfg.tuning.params if p not in space]
    if unknown:
        raise ValueError(f"tuning.params: {unknown[0]!r} is not searched for model.family {cfg.model.family!r} "
                         f"(it searches {', '.join(space)})")
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # one line per trial goes to ``log`` instead
    with warnings.catch_warnings():  # heartbeats are "experimental" in optuna 5.0
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        rdb = optuna.storages.RDBStorage(url, heartbeat_interval=HEARTBEAT_S, grace_period=3 * HEARTBEAT_S)
    study = optuna.create_study(  # epochs count from 1: judged from the first epoch, the second in longer trials
        study_name=name, direction="minimize", load_if_exists=True, storage=rdb,
        pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=2 if epochs_of(cfg) >= 4 else 1))
    before = len(study.trials)  # a resumed study: new draws, not the first call's again
    study.sampler = optuna.samplers.TPESampler(seed=cfg.tuning.seed + before,
                                               n_startup_trials=max(2, min(10, n_trials // 3)))
    log(f"study {name} ({storage_kind(url)}): {n_trials} trial(s) of {trial_length(cfg)} over "
        f"{', '.join(cfg.tuning.params)}; {data.n_train} training rows, {data.n_val} validation rows"
        + (f"; resuming after {before} trial(s)" if before else ""))

    def report(_: optuna.Study, t: optuna.trial.FrozenTrial) -> None:
        row = _row(t)
        shown = ", ".join(f"{k}={v:.3g}" for k, v in row.values.items())
        value = row.value if row.value is not None else row.last
        unit = facts_of(cfg.model.family).trial_step
        log(f"trial {row.number} {row.state.lower()} after {row.epochs} {unit}(s): val_"
            f"{VAL_METRIC[cfg.dataset.task]}={'-' if value is None else f'{value:.4f}'} ({shown})")

    own = mlflow.active_run() is None
    if own:
        tracking.configure()
    parent = mlflow.start_run(run_name=f"study {name}") if own else mlflow.active_run()
    status = "FAILED"
    try:
        mlflow.set_tags({"optuna_study": name, "optuna_storage": settings.mask_url(url)})
        work_dir.mkdir(parents=True, exist_ok=True)
        study.optimize(_objective(cfg, data, work_dir, name, data_version, space), n_trials=n_trials,
                       callbacks=[report])
        record = _record(cfg, study, url, data_version, parent.info.run_id, n_trials, time.perf_counter() - started)
        mlflow.log_metrics({f"best_val_{record.metric}": record.best_value, "trials_pruned": record.trials_pruned,
                            "trials_complete": record.trials_complete})
        status = "FINISHED"
    finally:
        rdb.engine.dispose()
        if own:
            mlflow.end_run(status)
    return record


def _record(cfg: PipelineConfig, study: optuna.Study, url: str, data_version: str, run_id: str, n_run: int,
            seconds: float) -> TunedHparams:
    rows = [_row(t) for t in study.get_trials(deepcopy=False)]
    count = {state: sum(r.state == state for r in rows) for state in ("COMPLETE", "PRUNED", "FAIL")}
    if not count["COMPLETE"]:
        raise ValueError(f"study {study.study_name}: no trial completed ({count['PRUNED']} pruned, "
                         f"{count['FAIL']} failed)")
    best = study.best_trial
    return TunedHparams(
        dataset=cfg.dataset.name, study_name=study.study_name, storage_kind=storage_kind(url),
        storage=settings.mask_url(url), data_version=data_version, config_hash=cfg.config_hash(),
        params=list(cfg.tuning.params), values=dict(best.params), metric=VAL_METRIC[cfg.dataset.task],
        best_value=float(best.value), best_trial=best.number, trials_complete=count["COMPLETE"],
        trials_pruned=count["PRUNED"], trials_failed=count["FAIL"], trials_run=n_run, mlflow_run_id=run_id,
        seconds=round(seconds, 3), created_at=datetime.now(UTC).isoformat(timespec="seconds"), trials=rows)


def tune_version(store: VersionedStore, cfg: PipelineConfig, data_version: str, work_dir: Path,
                 **kwargs: Any) -> TunedHparams:
    """Export the version's train and validation splits (never the holdout) and run its study on them."""
    try:
        files = export_splits(store, cfg, data_version, work_dir / "data", SPLITS)
    except NotFound as exc:
        raise ValueError(f"data version {data_version}: no features of {cfg.dataset.name} to tune on; materialize "
                         f"{cfg.dataset.name}/features for it first ({exc})") from None
    return run_study(cfg, files["train"], files["validation"], data_version, work_dir / "trials", **kwargs)
