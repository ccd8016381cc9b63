"""Fault injection for tests, demos and the dashboard: slow loader, slow rank (compute), slow input on one
rank, delayed all-reduce, heavy compute, slow checkpoint writes and a crash at a step. Everything is off
unless ``training.faults`` switches it on.

None of the faults draws random numbers, so a run with faults has the same weights as one without. torch is
imported only by the heavy-compute fault: the boosted trees use the crash, the slow rank and slow checkpoints.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlassets.core.config import FaultConfig

if TYPE_CHECKING:
    import torch

HEAVY_SIZE = 256


class InjectedCrash(RuntimeError):
    """Raised at ``faults.crash_at_step``; the command line turns it into an immediate exit."""


class Faults:
    """The faults of one rank; ``marker_dir`` remembers a crash so that the restarted run goes on."""

    def __init__(self, cfg: FaultConfig, rank: int, marker_dir: Path) -> None:
        self.cfg = cfg
        self.rank = rank
        self.marker_dir = marker_dir
        self.loader_delay_s = max(cfg.slow_loader_ms, 0.0) / 1000
        self.rank_delay_s = max(cfg.slow_rank_ms, 0.0) / 1000 if cfg.slow_rank == rank else 0.0
        self.allreduce_delay_s = max(cfg.allreduce_delay_ms, 0.0) / 1000
        if cfg.slow_input_rank == rank:  # one host's input path: its batches arrive late, nothing else changes
            self.loader_delay_s += max(cfg.slow_input_ms, 0.0) / 1000
        self.checkpoint_delay_s = max(cfg.slow_checkpoint_ms, 0.0) / 1000
        self._heavy: Any = None  # a torch.Tensor, made on first use

    def describe(self) -> list[str]:
        """Human-readable list of the faults switched on (empty when none)."""
        c = self.cfg
        out = [f"slow loader +{c.slow_loader_ms:g} ms" if c.slow_loader_ms > 0 else "",
               f"rank {c.slow_rank} +{c.slow_rank_ms:g} ms per step" if c.slow_rank >= 0 and c.slow_rank_ms > 0 else "",
               f"all-reduce +{c.allreduce_delay_ms:g} ms" if c.allreduce_delay_ms > 0 else "",
               f"heavy compute x{c.heavy_compute}" if c.heavy_compute > 0 else "",
               f"rank {c.slow_input_rank} input +{c.slow_input_ms:g} ms per batch"
               if c.slow_input_rank >= 0 and c.slow_input_ms > 0 else "",
               f"checkpoint writes +{c.slow_checkpoint_ms:g} ms" if c.slow_checkpoint_ms > 0 else "",
               f"crash at step {c.crash_at_step} on rank {c.crash_rank}" if c.crash_at_step >= 0 else ""]
        return [line for line in out if line]

    def slow_loader(self) -> None:
        if self.loader_delay_s:
            time.sleep(self.loader_delay_s)

    def compute(self, device: torch.device) -> None:
        """Extra per-step work on this rank: the slow-rank sleep and the heavy-compute matmuls."""
        if self.rank_delay_s:
            time.sleep(self.rank_delay_s)
        if self.cfg.heavy_compute > 0:
            import torch

            if self._heavy is None:  # no RNG: a fixed matrix keeps the run's random streams untouched
                self._heavy = torch.full((HEAVY_SIZE, HEAVY_SIZE), 1.0 / HEAVY_SIZE, device=device)
            out = self._heavy
            for _ in range(self.cfg.heavy_compute):
                out = out @ self._heavy

    def maybe_crash(self, step: int) -> None:
        """Raise ``InjectedCrash`` at the configured step, once per marker directory (the run's)."""
        if step != self.cfg.crash_at_step or self.cfg.crash_rank not in (-1, self.rank):
            return
        self.marker_dir.mkdir(parents=True, exist_ok=True)
        try:  # the first rank to get here leaves the marker; a restarted run finds it and carries on
            fd = os.open(self.marker_dir / f"crashed-at-step-{step}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.close(fd)
        raise InjectedCrash(f"injected crash at step {step} (rank {self.rank})")
