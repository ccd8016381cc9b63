"""What more GPUs cost: efficiency per doubling, projected speed-up, hours, GPU-hours and money.

The model: speed-up = GPUs x efficiency^log2(GPUs). ``SOURCE_PRESET`` reproduces a worked DDP cost table
(0.85 per doubling, a 24-hour single-GPU job, 250 rupees per GPU-hour). Spot capacity is cheaper but
preempted: each preemption costs the restart and, on average, half a checkpoint interval of lost work, and
every checkpoint stalls training for the measured stall.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class CostInputs:
    efficiency: float = 0.85  # kept per doubling of GPUs
    single_gpu_hours: float = 24.0  # the job on one GPU
    price_per_gpu_hour: float = 250.0
    currency: str = "₹"
    spot_discount: float = 0.6  # spot price = on-demand x (1 - discount)
    preemptions_per_gpu_hour: float = 0.01
    checkpoint_every_minutes: float = 30.0
    checkpoint_stall_s: float = 0.0  # measured: training blocked per checkpoint
    restart_s: float = 0.0  # measured: process start to training again after a preemption

    def check(self) -> None:
        if not 0 < self.efficiency <= 1:
            raise ValueError(f"efficiency per doubling must be in (0, 1], got {self.efficiency}")
        if self.single_gpu_hours <= 0 or self.price_per_gpu_hour < 0:
            raise ValueError("job hours must be > 0 and the price >= 0")
        if not 0 <= self.spot_discount < 1 or self.preemptions_per_gpu_hour < 0 or self.checkpoint_every_minutes <= 0:
            raise ValueError("spot discount in [0, 1), preemption rate >= 0, checkpoint interval > 0")


SOURCE_PRESET = CostInputs(efficiency=0.85, single_gpu_hours=24.0, price_per_gpu_hour=250.0, currency="₹")


@dataclass(frozen=True)
class Projection:
    gpus: int
    speedup: float
    hours: float
    gpu_hours: float
    cost: float
    spot_hours: float
    spot_gpu_hours: float
    spot_cost: float
    preemptions: float


def speedup(gpus: int, efficiency: float) -> float:
    return gpus * efficiency ** math.log2(gpus)


def fit_efficiency(throughput: dict[int, float]) -> float:
    """Efficiency per doubling from measured throughput at several rank counts (least squares in log space)."""
    if 1 not in throughput or throughput[1] <= 0:
        raise ValueError("need a measured throughput at 1 rank")
    pairs = [(math.log2(n), math.log(t / throughput[1] / n)) for n, t in throughput.items() if n > 1 and t > 0]
    if not pairs:
        raise ValueError("need a measured throughput at 2 or more ranks")
    log_e = sum(x * y for x, y in pairs) / sum(x * x for x, _ in pairs)
    return min(math.exp(log_e), 1.0)


def project(inputs: CostInputs, counts: tuple[int, ...] = GPU_COUNTS) -> list[Projection]:
    """One row per GPU count: on-demand as in the source, and spot with checkpoint stalls and preemptions."""
    inputs.check()
    interval_h = inputs.checkpoint_every_minutes / 60
    stall = 1 + inputs.checkpoint_stall_s / 3600 / interval_h
    per_preemption_h = inputs.restart_s / 3600 + interval_h / 2
    spot_price = inputs.price_per_gpu_hour * (1 - inputs.spot_discount)
    rows = []
    for n in counts:
        s = speedup(n, inputs.efficiency)
        hours = inputs.single_gpu_hours / s
        # wall hours h = hours*stall + rate*n*h*per_preemption  =>  h = hours*stall / (1 - rate*n*per_preemption)
        lost = inputs.preemptions_per_gpu_hour * n * per_preemption_h
        spot_hours = hours * stall / (1 - lost) if lost < 1 else math.inf
        rows.append(Projection(n, s, hours, n * hours, n * hours * inputs.price_per_gpu_hour, spot_hours,
                               n * spot_hours, n * spot_hours * spot_price,
                               inputs.preemptions_per_gpu_hour * n * spot_hours))
    return rows


def _num(value: float) -> str:
    """One decimal, without a trailing .0 (the source prints 24, 14.1, 46)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def money(value: float, currency: str) -> str:
    return "∞" if math.isinf(value) else f"{currency}{value:,.0f}"


def source_table(rows: list[Projection], currency: str) -> list[dict[str, str]]:
    """The on-demand rows formatted as the source prints them."""
    return [{"GPUs": str(r.gpus), "speed-up": f"{_num(r.speedup)}×", "hours to finish": _num(r.hours),
             "GPU-hours": _num(r.gpu_hours), "cost": money(r.cost, currency)} for r in rows]


def spot_table(rows: list[Projection], currency: str) -> list[dict[str, str]]:
    return [{"GPUs": str(r.gpus), "on-demand hours": _num(r.hours), "on-demand cost": money(r.cost, currency),
             "spot hours": "∞" if math.isinf(r.spot_hours) else _num(r.spot_hours),
             "expected preemptions": "∞" if math.isinf(r.preemptions) else _num(r.preemptions),
             "spot cost": money(r.spot_cost, currency),
             "spot saves": "—" if math.isinf(r.spot_cost) else f"{1 - r.spot_cost / r.cost:.0%}" if r.cost else "—"}
            for r in rows]
