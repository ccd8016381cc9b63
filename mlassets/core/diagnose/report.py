"""One training run's diagnosis: the verdict, the straggler and the per-rank table, as data and as text."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mlassets.core.diagnose.steps import LABELS, TIMES, StepArrays, rank_summary, read_steps, to_ms
from mlassets.core.diagnose.verdict import Verdict, bottleneck


@dataclass(frozen=True)
class Diagnosis:
    verdict: Verdict
    summary: pd.DataFrame  # per rank, see steps.rank_summary
    steps: StepArrays  # every row, in ms (steps.to_ms)

    @property
    def ranks(self) -> int:
        return len(self.summary)


def diagnose_frame(frame: pd.DataFrame) -> Diagnosis | None:
    """The diagnosis of telemetry rows (seconds, as recorded); None when there are none."""
    if frame.empty:
        return None
    ms = to_ms(frame)
    summary = rank_summary(ms)
    return Diagnosis(bottleneck(summary), summary, ms)


def diagnose_dir(directory: str | Path) -> Diagnosis | None:
    return diagnose_frame(read_steps(directory))


def format_diagnosis(d: Diagnosis, title: str = "") -> str:
    """The terminal report of ``mlassets diagnose``."""
    v = d.verdict
    lines = [title] if title else []
    lines += [f"verdict: {v.headline}", f"evidence: {v.evidence}"]
    lines += [f"note: {n}" for n in v.notes]
    lines.append("next steps:")
    lines += [f"  - {s}" for s in v.next_steps]
    header = ["rank", "steps", "median step", *(LABELS[t] for t in TIMES)]
    rows = [[str(rank), str(int(r["steps"])), f"{r['median_step']:.1f}", *(f"{r[t]:.1f}" for t in TIMES)]
            for rank, r in d.summary.iterrows()]
    widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]
    lines.append("per rank, ms per step (mean; median step):")
    for row in (header, *rows):
        lines.append("  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(lines)
