"""Model training, one process per rank:

    python -m mlassets.core.train --job job.json                  # one rank, no torchrun needed
    torchrun --standalone --nnodes=1 --nproc-per-node=2 --max-restarts=0 -m mlassets.core.train --job job.json
    torchrun --standalone --nproc-per-node=2 --max-restarts=0 -m mlassets.core.train \\
        --config mlassets/configs/flights.yaml --train train.parquet --validation validation.parquet --out runs/r1

``--nproc-per-node`` is ``training.nproc``. gloo on CPU, nccl on CUDA (``training.backend``). torchrun
never restarts a rank (``--max-restarts=0``): the orchestrator retries the step, and the new attempt
resumes from the newest valid checkpoint in ``<out>/checkpoints``. Rank 0 writes ``<out>/model`` (a
bundle, see ``mlassets.core.train.artifact``), ``<out>/result.json`` and ``<out>/final_weights.pt``; every rank
writes ``<out>/telemetry/rank<r>.parquet``. Under Dagster Pipes only rank 0 opens the Pipes channel.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from mlassets.core import lineage
from mlassets.core.config import parse_config
from mlassets.core.train.artifact import MANIFEST, WEIGHTS, ModelBundle, save_bundle
from mlassets.core.train.checkpoint.files import next_attempt
from mlassets.core.train.faults import InjectedCrash
from mlassets.core.train.job import TrainJob
from mlassets.core.train.metric_sinks import open_sink
from mlassets.core.train.outcome import CRASH_EXIT, RESULT, Outcome, record_outcome
from mlassets.core.train.reporting import Reporter
from mlassets.core.train.result import Environment, TrainingResult
from mlassets.core.train.split_stream import StreamData
from mlassets.core.train.torch_run import distributed as dd
from mlassets.core.train.torch_run import timing
from mlassets.core.train.torch_run.loader import load_training_data
from mlassets.core.train.torch_run.loop import Trainer
from mlassets.core.train.torch_run.preempt import Preempted


def state_sha256(state: dict[str, torch.Tensor]) -> str:
    """sha256 over names, dtypes, shapes and bytes of a state dict (equal iff bit-identical weights)."""
    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _outputs(job: TrainJob, data: StreamData, trainer: Trainer, outcome: dict[str, Any],
             env: dd.DistEnv, started: float) -> TrainingResult:
    """Rank 0: the model bundle (best epoch's weights), final weights and ``result.json``."""
    cfg, tr, out_dir = trainer.cfg, trainer.tr, Path(job.out_dir)
    with torch.random.fork_rng(devices=[]):
        model = trainer.family.build(data.spec, trainer.model_config)
    model.load_state_dict(outcome["best_state"])
    curves = trainer.progress.curves
    best = min(curves, key=lambda c: c["val_metric"])  # the earliest epoch on ties, like the best checkpoint
    bundle = ModelBundle(model.eval(), data.pre, trainer.model_config, cfg.dataset.target, data.center, data.scale,
                         {"data_version": job.data_version, "config_hash": cfg.config_hash(),
                          "torch_version": torch.__version__, "best_epoch": str(best["epoch"])}, task=trainer.task,
                         family=cfg.model.family, classes=data.classes)
    model_dir = save_bundle(bundle, out_dir / "model")
    torch.save(outcome["final_state"], out_dir / "final_weights.pt")
    manifest = json.loads((model_dir / MANIFEST).read_text())
    checkpoints = outcome["checkpoints"]
    by_step = {c["step"]: c for c in checkpoints}
    environment = Environment(threads=tr.threads, world_size=env.world_size, **lineage.environment())
    result = TrainingResult(
        data_version=job.data_version, task=trainer.task, seed=tr.seed, environment=environment,
        backend=env.backend, device=str(env.device), sharding=tr.sharding if env.distributed else "none",
        precision="bf16" if trainer.bf16 else "fp32", n_train=data.n_train, n_val=data.n_val, curves=curves,
        best_epoch=best["epoch"], val_metric=best["val_metric"], val_metric_name=trainer.val_metric,
        steps=trainer.progress.step, attempt=trainer.steps.attempt, resumed_from_step=trainer.resumed_from or 0,
        train_seconds=round(time.perf_counter() - started, 3), loop_seconds=round(trainer.loop_seconds, 4),
        validation_seconds=round(trainer.validation_seconds, 4),
        weights_sha256=manifest["files"][WEIGHTS]["sha256"],
        final_weights_sha256=state_sha256(outcome["final_state"]), model_dir=str(model_dir),
        checkpoints=checkpoints, final_checkpoint=by_step.get(trainer.progress.step, {}).get("path"),
        best_checkpoint=by_step.get(outcome["best_step"], {}).get("path"),
        telemetry_dir=str((out_dir / "telemetry").resolve()), telemetry=timing.summary(out_dir / "telemetry"),
        family=cfg.model.family, model_code=trainer.model_code,
    )
    record_outcome(out_dir, Outcome("trained", result=result))
    return result


def run_training(job: TrainJob, reporter: Reporter, hard_crash: bool = False) -> TrainingResult | None:
    """Train one model for ``job`` on this rank; rank 0 writes the outputs and returns its ``TrainingResult``
    (None on the other ranks).

    An injected crash raises ``InjectedCrash``, or with ``hard_crash`` ends the process at once (exit 75).
    """
    started = time.perf_counter()
    cfg = parse_config(job.config)  # every config rule, before any data is read or process group joined
    tr = cfg.training
    env = dd.setup(tr)
    out_dir = Path(job.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = reporter.log if env.is_main else (lambda msg: None)
    sink = open_sink(reporter.extras if env.is_main else {}, env.rank, out_dir)
    try:
        data = load_training_data(cfg, job.train_path, job.validation_path, reporter if env.is_main else None)
        attempt = dd.broadcast_int(next_attempt(out_dir) if env.is_main else 0, env)
        with dd.deterministic(tr.seed, tr.threads, env.device):
            trainer = Trainer(cfg, data, env, out_dir, log, sink, job.data_version, attempt,
                              init_bundle=job.init_bundle, force_budget=job.force_budget)
            log(f"training on {data.n_train} rows, validating on {data.n_val} (data {job.data_version}, "
                f"seed {tr.seed}, threads {tr.threads}, {env.world_size} rank(s), {env.backend}, {env.device}, "
                f"attempt {attempt})")
            if tr.precision == "bf16" and not trainer.bf16:
                log("precision bf16: autocast is for GPUs only; training in fp32 on CPU")
            if tr.sharding == "fsdp" and not env.distributed:
                log("sharding fsdp: a single rank has nothing to shard; training unsharded")
            if trainer.faults.describe():
                log(f"fault injection on: {', '.join(trainer.faults.describe())}")
            try:
                trainer.fit()
            except InjectedCrash as exc:
                if hard_crash:  # like a real crash: a save in flight is cut off mid-write, nothing is cleaned up
                    print(f"training crashed: {exc}", file=sys.stderr, flush=True)
                    os._exit(CRASH_EXIT)
                trainer.checkpointer.abandon(wait=True)  # in-process: the save in flight never becomes valid
                raise
            except Preempted as exc:
                if env.is_main:
                    record_outcome(out_dir, Outcome.preempted(exc.step))
                    log(str(exc))
                raise
            outcome = trainer.finish()
        result = _outputs(job, data, trainer, outcome, env, started) if env.is_main else None
    finally:
        sink.close()
        dd.teardown(env)
    if result is not None:
        reporter.log(f"best epoch {result.best_epoch}: val_{result.val_metric_name}={result.val_metric:.4f}; "
                     f"model in {result.model_dir}; result in {out_dir / RESULT}")
    return result
