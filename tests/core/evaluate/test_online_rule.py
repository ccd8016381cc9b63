"""The online test's rule over what each variant saw: wait, promote, or roll back naming every limit it broke;
with labels, the main metric of each variant's labelled rows too."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import yaml

from mlassets.core.config import parse_config, shipped_configs
from mlassets.core.config.serving import OnlineConfig
from mlassets.core.config.typed import ConfigError
from mlassets.core.evaluate.online_labels import summarize
from mlassets.core.evaluate.online_rule import VariantStats, decide

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


def _normal(mean: float, rows: int, seed: int) -> list[list[float]]:
    values = np.random.default_rng(seed).normal(mean, 1.0, rows)
    return [list(values[i:i + 4]) for i in range(0, rows, 4)]


def test_a_slow_erroring_shifted_candidate_is_rolled_back_with_each_reason() -> None:
    slow = decide(CHAMPION, _stats([10.0, 30.0, 30.0], [[1.0, 3.0]] * 3), RULE)
    assert slow.outcome == "rollback" and "3.00x the champion's 10.0 ms (limit 1.5x)" in slow.reason
    erroring = decide(CHAMPION, _stats([10.0, 10.0, 10.0], [[1.0, 3.0]] * 3, errors=1), RULE)
    assert erroring.outcome == "rollback" and "error rate 25.0% > 10.0%" in erroring.reason
    champion = _stats([10.0] * 100, _normal(0.0, 400, 1))
    shifted = decide(champion, _stats([10.0] * 100, _normal(1.0, 400, 2)), RULE)  # mean +1, champion std 1
    assert shifted.outcome == "rollback" and "prediction shift 1." in shifted.reason
    assert shifted.figures["prediction_shift"] == pytest.approx(1.0, abs=0.25)
    assert shifted.figures["prediction_shift_low"] > 0.25 and "always-valid confidence > 0.25" in shifted.reason
    dead = decide(CHAMPION, _stats([], [], errors=3), RULE)
    assert dead.outcome == "rollback" and "no request was scored by the candidate" in dead.reason


def test_an_equal_model_is_not_rolled_back_by_the_noise_of_a_few_predictions() -> None:
    champion, candidate = _stats([10.0] * 3, _normal(0.0, 12, 5)), _stats([10.0] * 3, _normal(0.0, 12, 6))
    found = decide(champion, candidate, RULE)
    assert found.figures["prediction_shift"] > 0.25  # a bare threshold would roll it back
    assert found.outcome == "promote" and found.figures["prediction_shift_low"] == 0.0, found.reason


def test_a_multiclass_shift_is_the_distance_of_label_shares() -> None:
    def labels(*names: str) -> pd.DataFrame:
        return pd.DataFrame({"prediction": list(names)})

    champion, candidate = VariantStats(), VariantStats()
    for _ in range(3):
        champion.scored(5.0, labels("a", "b"))
        candidate.scored(5.0, labels("a", "a"))
    few = decide(champion.summary(), candidate.summary(), RULE)
    assert few.figures["prediction_shift"] == 0.5 and few.outcome == "promote"  # 6 rows prove nothing
    for _ in range(1000):
        champion.scored(5.0, labels("a", "b"))
        candidate.scored(5.0, labels("a", "a"))
    many = decide(champion.summary(), candidate.summary(), RULE)
    assert many.figures["prediction_shift"] == 0.5 and many.outcome == "rollback"
    assert 0.25 < many.figures["prediction_shift_low"] < 0.5


def test_bad_online_settings_name_the_key() -> None:
    for kwargs, key in (({"share": 1.0}, "share"), ({"min_requests": 0}, "min_requests"), ({"confidence": 1.0},
                                                                                            "confidence"),
                        ({"max_error_rate": 2.0}, "max_error_rate"), ({"max_latency_ratio": 0.0}, "max_latency_ratio")):
        with pytest.raises(ConfigError, match=f"serving.online.{key}"):
            OnlineConfig(**kwargs)


LABELLED = OnlineConfig(min_requests=3, max_latency_ratio=1.5, max_prediction_shift=0.25, label_key=["origin"],
                        min_labelled=50, max_metric_regression=0.05)
LIKE = _stats([10.0] * 3, [[1.0, 3.0]] * 3)


def _rows(rows: int, mean: float, metric: str, spread: float) -> np.ndarray:
    """``rows`` per-row values of exactly ``mean`` (accuracy: hits, else evenly spread losses)."""
    if metric == "accuracy":
        return np.r_[np.ones(round(mean * rows)), np.zeros(rows - round(mean * rows))]
    return mean + spread * np.linspace(-1, 1, rows)


def _labels(champion: tuple[int, float], candidate: tuple[int, float], metric: str = "mae",
            spread: float = 1.0) -> dict:
    """What ``online_labels.add_labels`` writes (``summarize``) for a canary's rows of these sizes and means."""
    return summarize(metric, _rows(*champion, metric, spread), _rows(*candidate, metric, spread))


def test_labelled_rows_within_the_limit_promote_with_the_metric_in_the_reason() -> None:
    found = decide(CHAMPION, LIKE, LABELLED, _labels((80, 10.0), (60, 10.4)))
    assert found.outcome == "promote", found.reason
    assert "MAE 10.40 on 60 labelled rows vs the champion's 10.00 on 80 (+4.0%, limit +5%)" in found.reason
    assert "two-sample 95% always-valid interval" in found.reason and "with 95% power" in found.reason
    assert found.figures["metric_low"] < 0.05 < found.figures["metric_high"]
    assert found.figures["metric_candidate"] == 10.4 and found.figures["labelled_champion"] == 80


def test_a_metric_regression_over_the_limit_rolls_back_naming_both_figures() -> None:
    worse = decide(CHAMPION, LIKE, LABELLED, _labels((80, 10.0), (60, 11.0), spread=0.5))
    assert worse.outcome == "rollback" and worse.figures["metric_low"] > 0.05
    assert "MAE 11.00 on 60 labelled rows vs the champion's 10.00 on 80 (+10.0%, limit +5%)" in worse.reason
    noisy = decide(CHAMPION, LIKE, LABELLED, _labels((80, 10.0), (60, 10.6), spread=5.0))  # +6 %, but wide
    assert noisy.outcome == "promote" and noisy.figures["metric_low"] < 0.05 < noisy.figures["detectable_worse"]
    few_hits = decide(CHAMPION, LIKE, LABELLED, _labels((80, 0.80), (60, 0.75), "accuracy"))  # higher is better
    assert few_hits.outcome == "promote", few_hits.reason  # 5 points on 60 rows is noise
    fewer_hits = decide(CHAMPION, LIKE, LABELLED, _labels((4000, 0.80), (4000, 0.70), "accuracy"))
    assert fewer_hits.outcome == "rollback" and "accuracy 0.7000 on 4000" in fewer_hits.reason
    assert "limit -5%; higher is better" in fewer_hits.reason
    more_hits = decide(CHAMPION, LIKE, LABELLED, _labels((4000, 0.80), (4000, 0.90), "accuracy"))
    assert more_hits.outcome == "promote"
    rmse = decide(CHAMPION, LIKE, LABELLED, _labels((2000, 100.0), (2000, 121.0), "rmse", spread=5.0))
    assert rmse.outcome == "rollback" and rmse.figures["metric_low"] == pytest.approx(0.1, abs=0.01)  # √1.21 - 1
    gate_default = dataclasses.replace(LABELLED, max_metric_regression=None)  # unset: the gate's tolerance (1%)
    assert "limit +1%" in decide(CHAMPION, LIKE, gate_default, _labels((80, 10.0), (60, 10.05))).reason
    broken = summarize("mae", _rows(80, 10.0, "mae", 1.0), np.r_[_rows(59, 10.0, "mae", 1.0), np.nan])
    found = decide(CHAMPION, LIKE, LABELLED, broken)
    assert found.outcome == "rollback" and "the candidate's MAE on 60 candidate" in found.reason


def test_an_exact_champion_or_a_record_without_sums_is_still_judged_plainly() -> None:
    exact = summarize("mae", np.zeros(80), np.full(60, 0.5))  # the champion makes no error at all
    found = decide(CHAMPION, LIKE, LABELLED, exact)
    assert found.outcome == "rollback" and "MAE 0.50 on 60" in found.reason and "metric_low" not in found.figures
    older = {"metric": "mae", "variants": {"champion": {"labelled": 80, "value": 10.0},
                                           "candidate": {"labelled": 60, "value": 10.2}}}  # joined before sums
    kept = decide(CHAMPION, LIKE, LABELLED, older)
    assert kept.outcome == "promote" and "no interval yet" in kept.reason and "add the labels again" in kept.reason


def test_a_shadow_is_judged_on_pairs_which_see_what_split_rows_cannot() -> None:
    rng = np.random.default_rng(4)
    champion = np.abs(rng.normal(0, 10, 300))
    candidate = champion * 1.08 + np.abs(rng.normal(0, 0.3, 300))  # 8 % worse on every row alike
    as_pairs = summarize("mae", champion, candidate, (candidate, champion))
    as_split = summarize("mae", champion, candidate)
    shadow = dataclasses.replace(LABELLED, mode="shadow")
    paired = decide(CHAMPION, LIKE, shadow, as_pairs)
    assert paired.outcome == "rollback" and "paired 95% always-valid interval" in paired.reason
    assert decide(CHAMPION, LIKE, shadow, as_split).outcome == "promote"  # two samples: too wide to tell


def test_a_clearly_worse_candidate_is_rolled_back_before_min_labelled_and_before_min_requests() -> None:
    far_worse = _labels((80, 10.0), (49, 30.0))  # the candidate far worse, on 49 rows of the 50 planned
    found = decide(CHAMPION, _stats([10.0], [[1.0, 3.0]]), LABELLED, far_worse)
    assert found.outcome == "rollback" and "MAE 30.00 on 49" in found.reason


def test_bad_label_settings_name_the_key_and_the_value() -> None:
    for kwargs, key in (({"min_labelled": 0}, "min_labelled"), ({"max_metric_regression": -0.1},
                                                                 "max_metric_regression"),
                        ({"require_labels": True}, "require_labels"),
                        ({"label_key": ["origin", "origin"]}, "label_key")):
        with pytest.raises(ConfigError, match=f"serving.online.{key}"):
            OnlineConfig(**kwargs)
    data = yaml.safe_load(shipped_configs()["flights"].read_text())
    data["serving"] = {"online": {"label_key": ["origin", "flight"]}}  # flight identifies a row, but is no input
    with pytest.raises(ConfigError, match="serving.online.label_key: 'flight' is not one of the model's input"):
        parse_config(data)
    data["serving"]["online"]["label_key"] = ["origin", "dep_hour", "distance"]
    assert parse_config(data).serving.online.label_key == ["origin", "dep_hour", "distance"]
