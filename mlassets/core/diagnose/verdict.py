"""Why is training slow, and which rank lags: verdicts in words with the numbers behind them.

Every threshold is a ratio (a share of the step, one rank against the others), so a verdict does not depend
on how fast the machine is. The method: split the step into data wait, compute and communication;
low GPU utilization points at the input path or the host, high utilization with slow steps at sync.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mlassets.core.diagnose.steps import LABELS

DOMINANT_SHARE = 0.5  # one kind of time is at least half the step: that is the bound
LEADING_SHARE, LEAD_RATIO = 0.35, 2.0  # or over a third of it and twice the next kind
STRAGGLER_RATIO = 1.5  # a rank's busy time (step less sync) against the median of the others
STRAGGLER_SHARE = 0.25  # ... and its extra time is at least this share of the typical step

# kind of bound -> the parts it is made of
KINDS = {"input-bound": ("t_data_wait",), "compute-bound": ("t_compute", "t_optim"),
         "communication-bound": ("t_sync",), "checkpoint-bound": ("t_checkpoint",)}
NEXT_STEPS = {
    "input-bound": ["more data-loader workers (num_workers) and prefetching (prefetch_factor, pin_memory)",
                    "cache decoded and preprocessed batches instead of rebuilding them every epoch",
                    "a larger batch per rank, so fixed per-batch loading costs are paid less often"],
    "compute-bound": ["bf16 autocast (training.precision: bf16) on GPUs",
                      "a larger batch per device if memory allows (higher utilization)",
                      "more ranks: see Scaling and cost for what each doubling buys"],
    "communication-bound": ["a larger DDP bucket (bucket_cap_mb) so fewer, larger all-reduces run",
                            "overlap sync with compute: a larger batch per rank, or gradient accumulation "
                            "with no_sync() between optimizer steps", "fewer ranks or a faster interconnect"],
    "checkpoint-bound": ["checkpoint less often (training.checkpoint_every_steps / checkpoint_every_minutes)",
                         "async checkpoints (training.async_checkpoint: true)",
                         "faster storage for the working area"],
    "balanced": ["no single part dominates: profile a window of steps (training.profile.steps) to see operators",
                 "a larger batch per rank usually raises throughput when nothing dominates"],
}


def ms(value: float) -> str:
    """Milliseconds as people read them: whole above 10 ms, one decimal below."""
    return f"{value:.0f}" if abs(value) >= 10 else f"{value:.1f}"


CAUSES = {"t_data_wait": "input path (its data loader, disk or host)", "t_compute": "compute (its device)",
          "t_optim": "compute (its device)", "t_checkpoint": "checkpoint writes (its disk)"}


@dataclass(frozen=True)
class Straggler:
    rank: int
    cause: str  # "input path (...)" / "compute (its device)" / "checkpoint writes (its disk)"
    part: str  # the telemetry column that holds its extra time
    busy_ms: float
    peers_busy_ms: float
    extra_ms: float
    extra_part_ms: float
    others_wait_ms: float

    def sentence(self) -> str:
        return (f"rank {self.rank} lags: {ms(self.busy_ms)} ms of own work per step (median) against "
                f"{ms(self.peers_busy_ms)} ms on the other ranks; {ms(self.extra_part_ms)} of its "
                f"{ms(self.extra_ms)} ms extra is {LABELS[self.part]}, so the bottleneck is its {self.cause}; the "
                f"other ranks wait {ms(self.others_wait_ms)} ms per step for it")


@dataclass(frozen=True)
class Verdict:
    kind: str  # input-bound, compute-bound, communication-bound, checkpoint-bound, balanced
    evidence: str
    next_steps: list[str]
    step_ms: float
    parts_ms: dict[str, float]
    scope: str  # "all ranks" or "rank N"
    straggler: Straggler | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def headline(self) -> str:
        if self.straggler is not None:
            return f"straggler: rank {self.straggler.rank}, {self.straggler.cause}; {self.kind} on rank " \
                   f"{self.straggler.rank}"
        return self.kind


def find_straggler(summary: pd.DataFrame) -> Straggler | None:
    """The rank whose own work per step stands out from the others', with where its extra time goes."""
    if len(summary) < 2:
        return None
    busy = summary["median_busy"]
    rank = int(busy.idxmax())
    peers = summary.drop(index=rank)
    peers_busy = float(peers["median_busy"].median())
    extra = float(busy[rank]) - peers_busy
    typical = float(summary["median_step"].median())
    if busy[rank] < STRAGGLER_RATIO * peers_busy or extra < STRAGGLER_SHARE * typical:
        return None
    deltas = {p: float(summary.at[rank, f"median_{p}"] - peers[f"median_{p}"].median()) for p in CAUSES}
    deltas["t_compute"] += deltas.pop("t_optim")
    part = max(deltas, key=deltas.__getitem__)
    waited = float(peers["median_t_sync"].median() - summary.at[rank, "median_t_sync"])
    if waited <= 0.05 * extra:  # no sync recorded: the others' steps are simply shorter than its own
        waited = float(summary.at[rank, "median_step"] - peers["median_step"].median())
    return Straggler(rank, CAUSES[part], part, float(busy[rank]), peers_busy, extra, deltas[part], max(waited, 0.0))


def classify(parts_ms: dict[str, float], step_ms: float) -> str:
    shares = sorted(((sum(parts_ms[p] for p in ps) / step_ms if step_ms > 0 else 0.0, kind)
                     for kind, ps in KINDS.items()), reverse=True)
    (top, kind), (second, _) = shares[0], shares[1]
    if top >= DOMINANT_SHARE or (top >= LEADING_SHARE and top >= LEAD_RATIO * second):
        return kind
    return "balanced"


def bottleneck(summary: pd.DataFrame) -> Verdict:
    """The verdict on the ranks that set the pace: a straggler alone when there is one, else all ranks."""
    straggler = find_straggler(summary)
    rows = summary.loc[[straggler.rank]] if straggler else summary
    weights = rows["steps"].to_numpy(np.float64)
    parts = {p: float(np.average(rows[p], weights=weights)) for p in LABELS if p != "t_step"}
    step = float(np.average(rows["t_step"], weights=weights))
    kind = classify(parts, step)
    scope = f"rank {straggler.rank}" if straggler else ("all ranks" if len(summary) > 1 else "rank 0")
    if kind == "balanced":
        top = sorted(parts, key=parts.__getitem__, reverse=True)[:2]
        evidence = (f"no part dominates the {ms(step)} ms step: " +
                    ", ".join(f"{LABELS[p]} {ms(parts[p])} ms" for p in top))
    else:
        main = KINDS[kind]
        amount = sum(parts[p] for p in main)
        what = " and ".join(LABELS[p] for p in main)
        evidence = f"{ms(amount)} of {ms(step)} ms per step is {what}"
    if straggler:
        evidence += f" on rank {straggler.rank}"
    evidence += " (means over the steady steps: a periodic stall counts)"
    if straggler:
        evidence += f"; {straggler.sentence()}"
    notes = gpu_notes(rows, kind)
    return Verdict(kind, evidence, NEXT_STEPS[kind], step, parts, scope, straggler, notes)


def gpu_notes(rows: pd.DataFrame, kind: str) -> list[str]:
    """The rule of thumb on GPU utilization, where it was recorded."""
    util = rows["gpu_util"].to_numpy(np.float64)
    if np.isnan(util).all():
        return []
    mean_util = float(np.nanmean(util))
    memory = float(np.nanmax(rows["gpu_mem_mb"].to_numpy(np.float64)))
    note = f"GPU utilization {ms(mean_util)}%, memory up to {ms(memory)} MiB"
    if mean_util < 50:
        note += ": low utilization points at the input path or the host, not the model"
    elif kind == "communication-bound":
        note += ": high utilization with slow steps points at synchronization or the network"
    return [note]
