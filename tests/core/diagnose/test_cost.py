"""The cost projection: the source's DDP table to the rupee and the hour, the fitted efficiency, spot."""

from __future__ import annotations

import dataclasses
import math

import pytest

from mlassets.core.diagnose.cost import SOURCE_PRESET, fit_efficiency, project, source_table, spot_table

SOURCE = [  # as printed in the source (../shared/seeds/001_*.txt)
    {"GPUs": "1", "speed-up": "1×", "hours to finish": "24", "GPU-hours": "24", "cost": "₹6,000"},
    {"GPUs": "2", "speed-up": "1.7×", "hours to finish": "14.1", "GPU-hours": "28.2", "cost": "₹7,059"},
    {"GPUs": "4", "speed-up": "2.9×", "hours to finish": "8.3", "GPU-hours": "33.2", "cost": "₹8,304"},
    {"GPUs": "8", "speed-up": "4.9×", "hours to finish": "4.9", "GPU-hours": "39.1", "cost": "₹9,770"},
    {"GPUs": "16", "speed-up": "8.4×", "hours to finish": "2.9", "GPU-hours": "46", "cost": "₹11,494"},
]


def test_preset_reproduces_the_source_table() -> None:
    rows = source_table(project(SOURCE_PRESET), "₹")
    assert rows[:5] == SOURCE
    assert [r["GPUs"] for r in rows] == ["1", "2", "4", "8", "16", "32", "64"]


def test_efficiency_is_fitted_from_throughput_per_doubling() -> None:
    throughput = {n: 100 * n * 0.8 ** math.log2(n) for n in (1, 2, 4, 8)}
    assert fit_efficiency(throughput) == pytest.approx(0.8)
    with pytest.raises(ValueError):
        fit_efficiency({2: 10.0})


def test_spot_is_cheaper_until_preemptions_outweigh_the_discount() -> None:
    base = dataclasses.replace(SOURCE_PRESET, spot_discount=0.6, preemptions_per_gpu_hour=0.01,
                               checkpoint_every_minutes=30, checkpoint_stall_s=2.0, restart_s=120.0)
    rows = project(base)
    assert all(r.spot_hours > r.hours for r in rows)  # stalls and lost work make spot slower
    assert rows[0].spot_cost < rows[0].cost
    stormy = project(dataclasses.replace(base, preemptions_per_gpu_hour=0.2))
    assert math.isinf(stormy[-1].spot_hours)  # 64 GPUs preempted faster than they progress
    assert spot_table(stormy, "₹")[-1]["spot cost"] == "∞"
    with pytest.raises(ValueError):
        project(dataclasses.replace(base, efficiency=1.5))
