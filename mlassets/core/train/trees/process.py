"""A boosted-trees training process: the job's splits, the chunked loop with checkpoints, then the bundle (the best
round's trees) and ``result.json``; and a tuning trial of the same loop, in this process, without checkpoints."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from mlassets.core import lineage
from mlassets.core.config import PipelineConfig, parse_config
from mlassets.core.config.model import tree_params
from mlassets.core.train.artifact import MANIFEST, ModelBundle, save_bundle
from mlassets.core.train.checkpoint.files import next_attempt, resume_key
from mlassets.core.train.checkpoint.trees import Progress, TreeCheckpoints
from mlassets.core.train.faults import Faults, InjectedCrash
from mlassets.core.train.job import TrainJob
from mlassets.core.train.metric_sinks import open_sink
from mlassets.core.train.objectives import VAL_METRIC
from mlassets.core.train.outcome import CRASH_EXIT, RESULT, Outcome, record_outcome
from mlassets.core.train.reporting import Reporter
from mlassets.core.train.result import Environment, TrainingResult
from mlassets.core.train.splits import Splits
from mlassets.core.train.steplog import StepLog, summary
from mlassets.core.train.trees.common import rounds_per_checkpoint
from mlassets.core.train.trees.fit import Plan, Timing, Watch, describe, fit
from mlassets.core.train.trees.rows import TreeSplits, one_window, read_tree_splits

REPORT_EVERY = 10  # a tuning trial reports its validation metric to the pruner every this many rounds


def plan_of(cfg: PipelineConfig) -> Plan:
    p = tree_params(cfg.model.params)
    return Plan(p["rounds"], p["early_stopping_rounds"], rounds_per_checkpoint(cfg))


def train(lib: ModuleType, family: str, job: TrainJob, reporter: Reporter, hard_crash: bool) -> TrainingResult:
    """Train ``job`` with ``lib`` (``lightgbm_lib`` or ``xgboost_lib``), resuming this run's newest checkpoint.

    An injected crash (``training.faults.crash_at_step``, a round) raises ``InjectedCrash``, or with ``hard_crash``
    ends the process at once (exit 75) like a real crash.
    """
    started = time.perf_counter()
    cfg = parse_config(job.config)
    if job.init_bundle:
        raise ValueError(f"warm start from {job.warm_start_from or job.init_bundle}: model.family {family!r} trains "
                         "from scratch (automation.retrain: full)")
    tr, out_dir = cfg.training, Path(job.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sink = open_sink(reporter.extras, 0, out_dir)
    try:
        splits = read_tree_splits(cfg, job.train_path, job.validation_path, reporter)
        attempt = next_attempt(out_dir)
        engine = lib.Engine(cfg, splits, tr.threads)
        plan = plan_of(cfg)
        key = resume_key(cfg.to_dict(), job.data_version, 1, numeric=("checkpoint_every_steps",))
        faults = Faults(tr.faults, 0, out_dir / "faults")
        checkpoints = TreeCheckpoints(out_dir / "checkpoints", lib.MODEL_FILE, key, tr.keep_last, reporter.log,
                                      faults.checkpoint_delay_s)
        steps = StepLog(out_dir / "telemetry", 0, attempt)
        streamed = f", streamed {tr.stream_window_rows} rows at a time" if tr.loader == "stream" else ""
        reporter.log(f"{family}: training on {splits.n_train} rows, validating on {splits.n_val}{streamed} (data "
                     f"{job.data_version}, seed {tr.seed}, threads {tr.threads}, {engine_device(engine)}, up to "
                     f"{plan.rounds} rounds, a checkpoint every {plan.per_chunk}, attempt {attempt})")
        if faults.describe():
            reporter.log(f"fault injection on: {', '.join(faults.describe())}")
        watch = Watch(checkpoints, steps, sink, tr.telemetry_every_steps, None, faults.maybe_crash,
                      faults.rank_delay_s, reporter.log)
        try:
            progress, timing = fit(engine, splits, plan, watch)
        except InjectedCrash as exc:
            if hard_crash:  # like a real crash: nothing is cleaned up
                print(f"training crashed: {exc}", file=sys.stderr, flush=True)
                os._exit(CRASH_EXIT)
            raise
        steps.write()
        reporter.log(f"{family}: {describe(progress, plan)}")
        result = _outputs(lib, family, cfg, job, splits, progress, timing, checkpoints, engine, attempt, started)
    finally:
        sink.close()
    reporter.log(f"best round {result.best_epoch}: val_{result.val_metric_name}={result.val_metric:.4f}; model in "
                 f"{result.model_dir}; result in {out_dir / RESULT}")
    return result


def engine_device(engine: object) -> str:
    return str(getattr(engine, "device", "cpu"))


def _outputs(lib: ModuleType, family: str, cfg: PipelineConfig, job: TrainJob, splits: TreeSplits,
             progress: Progress, timing: Timing, checkpoints: TreeCheckpoints, engine: object, attempt: int,
             started: float) -> TrainingResult:
    """The bundle (the best round's trees, cut from the final checkpoint's model), and ``result.json``."""
    import json

    out_dir, tr = Path(job.out_dir), cfg.training
    assert progress.model is not None
    environment = Environment(threads=tr.threads, world_size=1, **lineage.environment(family))
    bundle = ModelBundle(lib.truncate(progress.model, progress.best_round), splits.pre,
                         dataclasses.asdict(cfg.model), cfg.dataset.target, splits.center, splits.scale,
                         {"data_version": job.data_version, "config_hash": cfg.config_hash(),
                          "library": environment.library, "best_epoch": str(progress.best_round)},
                         task=splits.task, family=family, classes=splits.classes)
    model_dir = save_bundle(bundle, out_dir / "model")
    manifest = json.loads((model_dir / MANIFEST).read_text())
    listing = checkpoints.listing()
    best = checkpoints.holding(progress.best_round)
    result = TrainingResult(
        data_version=job.data_version, task=splits.task, seed=tr.seed, environment=environment, backend=family,
        device=engine_device(engine), sharding="none", precision=lib.PRECISION,
        n_train=splits.n_train, n_val=splits.n_val, curves=progress.curves, best_epoch=progress.best_round,
        val_metric=progress.best_metric, val_metric_name=VAL_METRIC[splits.task], steps=progress.round,
        attempt=attempt, resumed_from_step=timing.resumed_from,
        train_seconds=round(time.perf_counter() - started, 3), loop_seconds=round(timing.loop_seconds, 4),
        validation_seconds=round(timing.validation_seconds, 4),
        weights_sha256=manifest["files"][lib.MODEL_FILE]["sha256"],
        final_weights_sha256=hashlib.sha256(progress.model).hexdigest(), model_dir=str(model_dir),
        checkpoints=listing, final_checkpoint=listing[-1]["path"] if listing else None,
        best_checkpoint=str(best.resolve()) if best is not None else None,
        telemetry_dir=str((out_dir / "telemetry").resolve()), telemetry=summary(out_dir / "telemetry"),
        family=family, model_code={},
    )
    record_outcome(out_dir, Outcome("trained", result=result))
    return result


def fit_trial(lib: ModuleType, cfg: PipelineConfig, splits: Splits, report: Callable[[int, float], None]) -> float:
    """One tuning trial: the same chunked loop without checkpoints, its validation metric reported to the pruner
    every ``REPORT_EVERY`` rounds (``report`` raises to prune); the best round's metric. The splits, read once for
    the study, are the reader's one window."""
    window = one_window(splits)
    engine = lib.Engine(cfg, window, cfg.training.threads)
    plan = plan_of(cfg)

    def on_round(r: int, metric: float) -> None:
        if r % REPORT_EVERY == 0 and r < plan.rounds:  # the last round's work is done: nothing left to save
            report(r, metric)

    progress, _ = fit(engine, window, plan, Watch(on_round=on_round))
    return progress.best_metric
