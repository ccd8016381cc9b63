"""``training.profile`` traces read with Meta's HolisticTraceAnalysis (HTA): what each rank's steps are made of.

On GPU traces HTA's own analyses: temporal breakdown per rank (idle, compute, non-compute kernel time), idle
time by cause, and communication/computation overlap. Those need GPU kernels; a CPU-only trace has none, so
there the report groups the top-level operators of each ``ProfilerStep`` in HTA's parsed trace into phases
(data loader, forward + loss, backward with its all-reduce hooks, optimizer) and says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

FORWARD = "forward + loss"  # top-level operators outside the other phases (DDP's forward is one of them)
PHASES = (("enumerate(DataLoader)", "data loader"), ("autograd::engine", "backward + all-reduce hooks"),
          ("Optimizer.", "optimizer"))


@dataclass
class ProfileReport:
    ranks: list[int]
    steps: dict[int, list[int]]  # profiled step numbers per rank
    gpu: bool
    temporal: pd.DataFrame | None = None  # HTA get_temporal_breakdown (GPU)
    idle: pd.DataFrame | None = None  # HTA get_idle_time_breakdown (GPU)
    overlap: pd.DataFrame | None = None  # HTA get_comm_comp_overlap (GPU)
    phases: pd.DataFrame = field(default_factory=pd.DataFrame)  # rank, phase, ms_per_step, share
    notes: list[str] = field(default_factory=list)


def has_traces(directory: Path) -> bool:
    return directory.is_dir() and any(directory.glob("rank*.json"))


def analyze(directory: Path) -> ProfileReport:
    """Parse every rank's trace with HTA and run the analyses that fit the trace."""
    from hta.trace_analysis import TraceAnalysis  # heavy import (jupyter stack): only when traces are shown

    logging.getLogger("hta").setLevel(logging.WARNING)
    analysis = TraceAnalysis(trace_dir=str(directory))
    traces = analysis.t.traces
    symbols = analysis.t.symbol_table.get_sym_table()
    ranks = sorted(int(r) for r in traces)
    gpu = any(bool((traces[r]["stream"] > 0).any()) for r in ranks)
    report = ProfileReport(ranks, {}, gpu)
    frames = []
    for rank in ranks:
        names = traces[rank]["name"].map(lambda i: symbols[i])
        frame, steps = _phases(traces[rank], names)
        report.steps[rank] = steps
        frames.append(frame.assign(rank=rank))
    report.phases = pd.concat(frames, ignore_index=True) if frames else report.phases
    if gpu:
        report.temporal = analysis.get_temporal_breakdown(visualize=False)
        idle = analysis.get_idle_time_breakdown(visualize=False)
        report.idle = idle[0] if isinstance(idle, tuple) else idle
        report.overlap = analysis.get_comm_comp_overlap(visualize=False)
    else:
        report.notes.append("CPU-only trace: HTA's temporal breakdown, idle time and communication/computation "
                            "overlap measure GPU kernels, and this trace has none; shown instead: the phases of "
                            "each profiled step from HTA's parsed trace")
    return report


def _phases(trace: pd.DataFrame, names: pd.Series) -> tuple[pd.DataFrame, list[int]]:
    """ms per profiled step of each phase: top-level operators of the thread that runs ``ProfilerStep#N``."""
    is_step = names.str.startswith("ProfilerStep#")
    if not is_step.any():
        return pd.DataFrame(columns=["phase", "ms_per_step", "share"]), []
    steps = sorted(int(n.split("#")[1]) for n in names[is_step])
    tid = trace.loc[is_step, "tid"].iloc[0]
    mine = trace[(trace["tid"] == tid) & ~is_step].assign(label=names).sort_values(["ts", "dur"],
                                                                                     ascending=[True, False])
    starts, durations = mine["ts"].to_numpy(np.float64), mine["dur"].to_numpy(np.float64)
    top = np.zeros(len(mine), dtype=bool)
    end = -np.inf
    for i in range(len(mine)):  # an operator is top-level when no earlier one on the thread still runs
        if starts[i] >= end:
            top[i], end = True, starts[i] + durations[i]
    tops = mine[top]
    phase = pd.Series(FORWARD, index=tops.index)
    for prefix, label in PHASES:
        phase[tops["label"].str.startswith(prefix).to_numpy()] = label
    n = len(steps)
    total_us = float(trace.loc[is_step, "dur"].sum())
    out = (tops["dur"].groupby(phase.rename("phase")).sum() / n / 1000).rename("ms_per_step").reset_index()
    untraced = total_us / n / 1000 - out["ms_per_step"].sum()
    out.loc[len(out)] = ["untraced (Python, waiting)", max(untraced, 0.0)]
    out["share"] = out["ms_per_step"] / (total_us / n / 1000)
    return out, steps
