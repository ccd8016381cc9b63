"""The run budget: after its first steps a training run knows what a step costs here, so it knows what the whole
run will cost (steps x measured step time); one expected to take longer than ``training.budget_hours`` stops
there, naming that cost, unless it was started with ``--force`` (``TrainJob.force_budget``).

Rank 0 decides from its own measurement and every rank follows (one broadcast, once per attempt). The refusal is the
process's ``outcome`` (``refused``), so the orchestrator stops the step without retrying it.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.config import TrainingConfig
from mlassets.core.train.outcome import Outcome, record_outcome

if TYPE_CHECKING:
    from mlassets.core.train.torch_run.distributed import DistEnv

PROBE_STEPS = 5  # steps measured before deciding (the first one, with its warm-up, is left out)


class BudgetExceeded(ValueError):
    """The run's expected cost is over its budget (and nobody forced it)."""


def duration(seconds: float) -> str:
    for unit, size in (("years", 365 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.0f} s"


def over_budget(tr: TrainingConfig, total_steps: int, done_steps: int, step_times: list[float]) -> str | None:
    """The refusal, naming the expected cost, when the remaining steps cost more than the budget; else None."""
    if tr.budget_hours <= 0 or not step_times:
        return None
    step_s = statistics.median(step_times[1:] or step_times)
    expected = (total_steps - done_steps) * step_s
    if expected <= tr.budget_hours * 3600:
        return None
    per_epoch = total_steps // max(tr.epochs, 1)
    return (f"training.epochs: {tr.epochs} epochs x {per_epoch} steps = {total_steps} steps; at "
            f"{step_s * 1000:.3g} ms per step (measured on the first {len(step_times)}) the run would take "
            f"{duration(expected)}, over training.budget_hours {tr.budget_hours:g} h. If you mean it, run it with "
            "`mlassets run --force` (or raise training.budget_hours)")


class BudgetProbe:
    """Measures the first steps of an attempt, then decides once (rank 0, broadcast): ``BudgetExceeded`` on every
    rank when the run is over its budget. Forced runs are never measured."""

    def __init__(self, tr: TrainingConfig, total_steps: int, out_dir: Path, env: DistEnv, force: bool) -> None:
        self.tr, self.total_steps, self.out_dir, self.env = tr, total_steps, out_dir, env
        self.times: list[float] | None = None if force or tr.budget_hours <= 0 else []

    def step(self, seconds: float, done_steps: int) -> None:
        if self.times is None:
            return
        self.times.append(seconds)
        if len(self.times) < PROBE_STEPS and done_steps < self.total_steps:
            return
        from mlassets.core.train.torch_run.distributed import broadcast_int  # torch: the training process has it loaded

        refusal = over_budget(self.tr, self.total_steps, done_steps, self.times) if self.env.is_main else None
        self.times = None
        if broadcast_int(int(refusal is not None), self.env):
            if refusal is not None:
                record_outcome(self.out_dir, Outcome("refused", refusal))
            raise BudgetExceeded(refusal or "the run is over its budget (rank 0 says why)")
