"""The training loop: timed steps, validation per epoch, full-state checkpoints and exact resume."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from mlassets.core.config import PipelineConfig
from mlassets.core.fleet import heartbeat
from mlassets.core.metric_defs import MeanSums
from mlassets.core.train.artifact import load_bundle
from mlassets.core.train.checkpoint.manager import PREFIX, Checkpointer, best_checkpoint, list_checkpoints, step_dirs
from mlassets.core.train.checkpoint.state import Progress, capture, load_model_weights, restore, resume_key
from mlassets.core.train.family import family_of
from mlassets.core.train.faults import Faults
from mlassets.core.train.metric_sinks import MetricsSink
from mlassets.core.train.objectives import TORCH_LOSSES, VAL_METRIC, resolve_loss, validation_losses, validation_value
from mlassets.core.train.split_stream import StreamData
from mlassets.core.train.torch_run import distributed as dd
from mlassets.core.train.torch_run.loader import TabularData, build_loader
from mlassets.core.train.torch_run.preempt import Preempted, PreemptionFlag
from mlassets.core.train.torch_run.profiling import start_profiler
from mlassets.core.train.torch_run.run_budget import BudgetProbe
from mlassets.core.train.torch_run.timing import StepLog, SyncTimer, aggregate, gpu_sample

LOADER_SPAN = "enumerate(DataLoader)#Batches.__next__"  # as torch's DataLoader names its own (the profile reads it)
EVAL_BATCH = 16_384  # validation rows per forward pass: their activations are the transient peak of an epoch's end


def schedule(kind: str, total_steps: int) -> Callable[[int], float]:
    if kind == "cosine":
        return lambda step: 0.5 * (1.0 + math.cos(math.pi * min(step, total_steps) / max(total_steps, 1)))
    return lambda step: 1.0


class Trainer:
    """One rank's view of a training run; every rank builds the same objects in the same order."""

    def __init__(self, cfg: PipelineConfig, data: TabularData | StreamData, env: dd.DistEnv, out_dir: Path,
                 log: Callable[[str], None], sink: MetricsSink, data_version: str, attempt: int,
                 init_bundle: str = "", force_budget: bool = False) -> None:
        tr = self.tr = cfg.training
        self.cfg, self.data, self.env, self.log, self.sink = cfg, data, env, log, sink
        self.task = cfg.dataset.task
        self.val_metric = VAL_METRIC[self.task]
        self.cuda = env.device.type == "cuda"
        self.bf16 = tr.precision == "bf16" and self.cuda
        self.model_config = asdict(cfg.model)
        self.family = family_of(cfg.model.family)
        self.model_code = self.family.recorded(cfg)  # a plug-in's source hash: taken before it builds anything
        self.module = self.family.build(data.spec, self.model_config)
        if init_bundle:  # a warm start; every rank maps the same bundle onto the same seeded module
            self._warm_start(init_bundle)
        self.faults = Faults(tr.faults, env.rank, out_dir / "faults")
        self.timer = SyncTimer(env.world_size, self.faults.allreduce_delay_s, self.cuda)
        self.model = dd.parallelize(self.module, env, tr.sharding, self.timer)
        if env.rank:  # own dropout stream per rank; the initial weights came from the common seed
            torch.manual_seed(tr.seed + env.rank)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=tr.lr, weight_decay=tr.weight_decay,
                                           fused=True)  # one kernel per step: ~5x faster than the loop on CPU
        self.loader = self.sampler = build_loader(data, self.faults, tr, env.rank, env.world_size)
        self.total_steps = tr.epochs * len(self.sampler)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, schedule(tr.lr_schedule, self.total_steps))
        self.loss_fn = getattr(torch.nn, TORCH_LOSSES[resolve_loss(self.task, tr.loss)])(reduction="sum")
        self.checkpointer = Checkpointer(out_dir / "checkpoints", env, tr.keep_last, tr.async_checkpoint, log,
                                         self.faults.checkpoint_delay_s)
        self.profiler = start_profiler(tr.profile, env.rank, out_dir, self.cuda)
        self.steps = StepLog(out_dir / "telemetry", env.rank, attempt)
        self.key = resume_key(cfg.to_dict(), data_version, env.world_size)
        self.progress = Progress()
        self.resumed_from: int | None = None
        self._loss = torch.zeros((), dtype=torch.float64, device=env.device)
        self._last_save = time.monotonic()
        self.loop_seconds = self.validation_seconds = 0.0
        self.budget = BudgetProbe(tr, self.total_steps, out_dir, env, force_budget)
        self.preemption, self._saved_step = PreemptionFlag(), -1  # SIGTERM under the fleet: checkpoint, exit

    def _warm_start(self, bundle_dir: str) -> None:
        state, kept = self.family.warm_start(load_bundle(bundle_dir), self.data.pre, self.module)
        self.module.load_state_dict(state)
        self.log(f"warm start from {bundle_dir}" + (f"; seeded (shape changed): {', '.join(kept)}" if kept else ""))

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return torch.autocast("cuda", dtype=torch.bfloat16) if self.bf16 else contextlib.nullcontext()

    def resume(self) -> None:
        """Continue from the newest valid checkpoint of this run, if there is one (rank 0 decides)."""
        path = self.checkpointer.find_latest(self.key) if self.env.is_main else None
        step = dd.broadcast_int(-1 if path is None else int(path.name[len(PREFIX):]), self.env)
        if step < 0:
            return
        path = self.checkpointer.root / f"{PREFIX}{step:09d}"
        self.progress = restore(path, self.model, self.optimizer, self.scheduler, self.loader, self.env)
        self._loss.fill_(self.progress.loss_sum)
        self.steps.resume(step)
        self.resumed_from = step
        heartbeat.note(checkpoint_step=step)
        self.log(f"resumed from checkpoint {path.name}: step {step}, epoch {self.progress.epoch}")

    def fit(self) -> None:
        self.resume()
        self.loader.preload()  # the first window (the whole split, or the one a resumed position falls in)
        for epoch in range(self.progress.epoch, self.tr.epochs + 1):
            self.progress.epoch = epoch
            if not self.progress.mid_epoch:
                self.sampler.set_epoch(epoch)
            self.model.train()
            batches = iter(self.loader)  # a resumed loader restores its sampler's position here
            if self.sampler.epoch != epoch:
                raise RuntimeError(f"data loader is at epoch {self.sampler.epoch}, the run at {epoch}")
            while self.sampler.position < len(self.sampler):
                if self.preemption.requested(self.env):
                    self._preempt()
                self._step(batches, epoch)
            self._end_epoch(epoch)
        if self.profiler is not None:
            self.profiler.stop()
        self.checkpointer.wait()

    def _preempt(self) -> None:
        """The full-state checkpoint of this step (unless it is written already), then end as preempted."""
        if self.progress.step and self._saved_step != self.progress.step:
            self._save(None)
        self.checkpointer.wait()
        raise Preempted(self.progress.step)

    def _step(self, batches: Iterator[tuple[torch.Tensor, ...]], epoch: int) -> None:
        env, timer, progress = self.env, self.timer, self.progress
        t0 = time.perf_counter()
        with torch.profiler.record_function(LOADER_SPAN):
            x_cat, x_num, y = next(batches)
        n_global = self.sampler.global_size(self.sampler.position - 1)
        if self.cuda:
            x_cat, x_num, y = (t.to(env.device, non_blocking=True) for t in (x_cat, x_num, y))
            torch.cuda.synchronize(env.device)
        t1 = time.perf_counter()
        timer.reset()
        start = self._event()
        with self.autocast():
            pred = self.model(x_cat, x_num)
            self.faults.compute(env.device)
        row_sum = self.loss_fn(pred.float(), y)
        self._loss += row_sum.detach().double()
        (row_sum * (env.world_size / n_global)).backward()  # averaged over ranks: the global batch mean
        end = self._event()
        if self.cuda:
            torch.cuda.synchronize(env.device)
        t2 = time.perf_counter()
        compute, sync = self._split(t1, t2, start, end)
        fence = self.checkpointer.wait_staged()  # the optimizer may not change what a save is still copying
        t3 = time.perf_counter()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        if self.cuda:
            torch.cuda.synchronize(env.device)
        t4 = time.perf_counter()
        gpu_wait = fence[0].elapsed_time(fence[1]) / 1000 if fence else 0.0  # the GPU waited for the copy
        progress.step += 1
        progress.mid_epoch = True
        heartbeat.note(step=progress.step)
        last = self.sampler.position == len(self.sampler)
        if not last and self._due():
            self._save(None)
        t5 = time.perf_counter()
        parts = (t1 - t0, compute, sync, t4 - t3 - gpu_wait, (t3 - t2) + (t5 - t4) + gpu_wait)
        self.steps.add(epoch, progress.step, parts, t5 - t0, len(y), gpu_sample(env.device))
        self.loop_seconds += t5 - t0
        self.budget.step(t5 - t0, progress.step)
        if self.profiler is not None:
            self.profiler.step()
        if self.tr.telemetry_every_steps > 0 and progress.step % self.tr.telemetry_every_steps == 0:
            self._publish()
        if not last:  # the last step of an epoch crashes after its epoch-end checkpoint
            self.faults.maybe_crash(progress.step)

    def _event(self) -> torch.cuda.Event | None:
        if not self.cuda:
            return None
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def _split(self, t1: float, t2: float, start: Any, end: Any) -> tuple[float, float]:
        """(compute, sync): split at the moment the last gradient bucket went to the all-reduce."""
        timer = self.timer
        if self.cuda:  # the caller synchronized the device
            if timer.last_event is None:
                return start.elapsed_time(end) / 1000, 0.0
            return start.elapsed_time(timer.last_event) / 1000, timer.last_event.elapsed_time(end) / 1000
        if timer.last_launch is None:
            return t2 - t1, 0.0
        return timer.last_launch - t1, t2 - timer.last_launch

    def _due(self) -> bool:
        every, minutes = self.tr.checkpoint_every_steps, self.tr.checkpoint_every_minutes
        due = every > 0 and self.progress.step % every == 0
        if minutes > 0:  # rank 0's clock decides for everyone
            late = self.env.is_main and time.monotonic() - self._last_save >= 60 * minutes
            due = bool(dd.broadcast_int(int(due or late), self.env))
        return due

    def _save(self, val_metric: float | None) -> None:
        self.progress.loss_sum = float(self._loss)
        tensors, rank_state, meta = capture(self.model, self.optimizer, self.scheduler, self.loader, self.progress,
                                            self.env, self.key, val_metric)
        self.checkpointer.save(self.progress.step, tensors, rank_state, meta)
        self.steps.flush()
        self._last_save = time.monotonic()
        self._saved_step = self.progress.step
        heartbeat.note(checkpoint_step=self.progress.step)

    def _publish(self) -> None:
        """Periodic aggregates of the last window of steps (rank 0's view plus the slowest rank)."""
        agg = aggregate(self.steps.window())
        slowest = dd.all_max([agg.get("median_step_ms", 0.0)], self.env)[0]
        self.sink.log({**{f"telemetry/{k}": v for k, v in agg.items()}, "telemetry/slowest_rank_step_ms": slowest},
                      step=self.progress.step)

    def _end_epoch(self, epoch: int) -> None:
        started = time.perf_counter()
        (loss_sum,) = dd.all_sum([float(self._loss)], self.env)
        val_metric = self.validate()
        train_loss = loss_sum / self.data.n_train
        self.progress.curves.append({"epoch": epoch, "train_loss": train_loss, "val_metric": val_metric})
        name = f"val_{self.val_metric}"
        self.log(f"epoch {epoch}/{self.tr.epochs}: train_loss={train_loss:.5f} {name}={val_metric:.4f} "
                 f"(step {self.progress.step})")
        self.sink.log({"train_loss": train_loss, name: val_metric}, step=epoch)
        self.progress.epoch, self.progress.mid_epoch = epoch + 1, False
        self._loss.zero_()
        saving = time.perf_counter()
        self.validation_seconds += saving - started
        self._save(val_metric)
        self.loop_seconds += time.perf_counter() - saving
        self.faults.maybe_crash(self.progress.step)

    def validate(self) -> float:
        """Validation MAE in target units, or log loss (binary, multiclass), in float64; every rank runs it (FSDP
        needs all)."""
        model = self.model if self.tr.sharding == "fsdp" and self.env.distributed else self.module
        data, device = self.data, self.env.device
        model.eval()
        sums = MeanSums()  # the metric is a mean of row values: summed chunk by chunk, no chunk kept
        with torch.no_grad(), self.autocast():
            for x_cat, x_num, y in data.validation_chunks(EVAL_BATCH):
                out = model(x_cat.to(device), x_num.to(device)).double().cpu().numpy()
                sums = sums + MeanSums.of(validation_losses(self.task, out, y, data.center, data.scale))
        model.train()
        return validation_value(self.task, sums)

    def finish(self) -> dict[str, Any]:
        """Final and best weights (rank 0 gets CPU tensors), checkpoint list, telemetry files."""
        self.checkpointer.wait()
        final = dd.full_state_dict(self.model, self.env)
        root = self.checkpointer.root
        best = best_checkpoint(step_dirs(root)) if self.env.is_main else None
        best_step = dd.broadcast_int(-1 if best is None else int(best.name[len(PREFIX):]), self.env)
        if best_step < 0:
            raise RuntimeError(f"no checkpoint with a validation metric under {root}")
        weights = final
        if best_step != self.progress.step:
            load_model_weights(root / f"{PREFIX}{best_step:09d}", self.model)
            weights = dd.full_state_dict(self.model, self.env)
        self.steps.write()
        self.checkpointer.close()
        dd.barrier(self.env)
        return {"final_state": final, "best_state": weights, "best_step": best_step,
                "checkpoints": list_checkpoints(root) if self.env.is_main else []}
