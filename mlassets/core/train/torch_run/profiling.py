"""``training.profile``: ``torch.profiler`` traces of a window of steps on every rank.

Each rank writes ``<run>/profile/rank<r>.json`` (Chrome trace format, with the rank in ``distributedInfo``
under a process group), the input HolisticTraceAnalysis reads. Off unless ``training.profile.steps > 0``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import profiler

from mlassets.core.config import ProfileConfig


class StepProfiler:
    """Wraps ``torch.profiler.profile`` with a wait/warmup/active schedule; ``step()`` after every step."""

    def __init__(self, cfg: ProfileConfig, rank: int, directory: Path, cuda: bool) -> None:
        self.path = directory / f"rank{rank}.json"
        activities = [profiler.ProfilerActivity.CPU] + ([profiler.ProfilerActivity.CUDA] if cuda else [])
        schedule = profiler.schedule(wait=cfg.wait, warmup=cfg.warmup, active=cfg.steps, repeat=1)
        self._prof = profiler.profile(activities=activities, schedule=schedule, on_trace_ready=self._export)
        self._prof.start()
        self._open = True

    def _export(self, prof: torch.profiler.profile) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(self.path))

    def step(self) -> None:
        if self._open:
            self._prof.step()

    def stop(self) -> None:
        """End profiling (a window cut short by the end of training is still written)."""
        if self._open:
            self._open = False
            self._prof.stop()


def start_profiler(cfg: ProfileConfig, rank: int, out_dir: Path, cuda: bool) -> StepProfiler | None:
    """A running profiler when ``cfg.steps > 0``, else None."""
    return StepProfiler(cfg, rank, out_dir / "profile", cuda) if cfg.steps > 0 else None
