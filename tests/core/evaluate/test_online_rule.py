"""The online test's rule over what each variant saw: wait, promote, or roll back naming every limit it broke."""

from __future__ import annotations

import pandas as pd
import pytest

from mlassets.core.config._typed import ConfigError
from mlassets.core.config.serving import OnlineConfig
from mlassets.core.evaluate.online import VariantStats, decide

RULE = OnlineConfig(min_requests=3, max_latency_ratio=1.5, max_error_rate=0.1, max_prediction_shift=0.25)


def _stats(latencies: list[float], predictions: list[list[float]], errors: int = 0) -> dict:
    stats = VariantStats()
    for ms, values in zip(latencies, predictions, strict=True):
        stats.scored(ms, values)
    for _ in range(errors):
        stats.failed()
    return stats.summary()


CHAMPION = _stats([10.0, 10.0, 10.0, 10.0], [[1.0, 3.0]] * 4)


def test_the_rule_waits_for_min_requests_then_promotes_a_like_candidate() -> None:
    early = decide(CHAMPION, _stats([10.0, 11.0], [[1.0, 3.0]] * 2), RULE)
    assert early.outcome == "wait" and "decides at 3 each" in early.reason
    done = decide(CHAMPION, _stats([10.0, 11.0, 12.0], [[1.0, 3.0]] * 3), RULE)
    assert done.outcome == "promote", done.reason
    assert done.figures["prediction_shift"] == 0.0 and done.figures["error_rate"] == 0.0


def test_a_slow_erroring_shifted_candidate_is_rolled_back_with_each_reason() -> None:
    slow = decide(CHAMPION, _stats([10.0, 30.0, 30.0], [[1.0, 3.0]] * 3), RULE)
    assert slow.outcome == "rollback" and "3.00x the champion's 10.0 ms (limit 1.5x)" in slow.reason
    erroring = decide(CHAMPION, _stats([10.0, 10.0, 10.0], [[1.0, 3.0]] * 3, errors=1), RULE)
    assert erroring.outcome == "rollback" and "error rate 25.0% > 10.0%" in erroring.reason
    shifted = decide(CHAMPION, _stats([10.0] * 3, [[2.0, 4.0]] * 3), RULE)  # mean +1, champion std 1
    assert shifted.outcome == "rollback" and "prediction shift 1.000 > 0.25" in shifted.reason
    dead = decide(CHAMPION, _stats([], [], errors=3), RULE)
    assert dead.outcome == "rollback" and "no request was scored by the candidate" in dead.reason


def test_a_multiclass_shift_is_the_distance_of_label_shares() -> None:
    def labels(*names: str) -> pd.DataFrame:
        return pd.DataFrame({"prediction": list(names)})

    champion, candidate = VariantStats(), VariantStats()
    for _ in range(3):
        champion.scored(5.0, labels("a", "b"))
        candidate.scored(5.0, labels("a", "a"))
    found = decide(champion.summary(), candidate.summary(), RULE)
    assert found.figures["prediction_shift"] == 0.5 and found.outcome == "rollback"


def test_bad_online_settings_name_the_key() -> None:
    for kwargs, key in (({"share": 1.0}, "share"), ({"min_requests": 0}, "min_requests"),
                        ({"max_error_rate": 2.0}, "max_error_rate"), ({"max_latency_ratio": 0.0}, "max_latency_ratio")):
        with pytest.raises(ConfigError, match=f"serving.online.{key}"):
            OnlineConfig(**kwargs)
