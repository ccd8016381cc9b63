"""Preemption that loses no work: under the fleet (``MLASSETS_PREEMPTIBLE=1``) SIGTERM only sets a flag; at the next
step boundary every rank agrees (one max all-reduce), the full-state checkpoint of that step is written and the
process ends as *preempted* (an ``outcome`` of its own, exit ``PREEMPTED_EXIT``), not failed. The requeued attempt
resumes from that checkpoint, so the weights equal an unpreempted run's. A spot node's notice is the same SIGTERM;
Dagster terminating a preempted run reaches the training process as SIGINT (its Pipes client), handled the same."""

from __future__ import annotations

import os
import signal
from types import FrameType

from mlassets.core.train.outcome import Outcome

PREEMPTIBLE_ENV = "MLASSETS_PREEMPTIBLE"


class Preempted(Exception):
    """SIGTERM arrived; the checkpoint of ``step`` is written."""

    def __init__(self, step: int) -> None:
        super().__init__(Outcome.preempted(step).sentence)
        self.step = step


class PreemptionFlag:
    def __init__(self) -> None:
        self.signalled = False
        self.enabled = os.environ.get(PREEMPTIBLE_ENV) == "1"
        if self.enabled:
            signal.signal(signal.SIGTERM, self._handle)
            signal.signal(signal.SIGINT, self._handle)  # Dagster terminating a run: its Pipes client sends SIGINT

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signalled = True

    def requested(self, env: object) -> bool:
        """Every rank's answer is the same (the max over ranks), so all stop at the same step."""
        if not self.enabled:
            return False
        if not getattr(env, "distributed", False):
            return self.signalled
        from mlassets.core.train.torch_run import distributed as dd

        return dd.all_max([float(self.signalled)], env)[0] > 0  # type: ignore[arg-type]
