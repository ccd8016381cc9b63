"""The retrain policy of a scheduled run: full, or a warm start from the champion with a full one every N."""

from __future__ import annotations

from mlassets.core.config import AutomationConfig

FULL, WARM_START = "full", "warm_start"


def scheduled_retrain(auto: AutomationConfig, previous_scheduled: int, has_champion: bool) -> str:
    """``full`` or ``warm_start`` for the next scheduled retrain, after ``previous_scheduled`` of them.

    With ``retrain: warm_start`` every ``full_retrain_every``-th scheduled retrain is full, so a model never
    drifts from what a retrain from scratch would give for long; without a champion there is nothing to start
    from, so it is full.
    """
    if auto.retrain == FULL or not has_champion:
        return FULL
    return FULL if (previous_scheduled + 1) % auto.full_retrain_every == 0 else WARM_START
