"""The online test's rule over what each variant saw: wait, promote, or roll back naming every limit it broke;
with labels, the main metric of each variant's labelled rows too."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
import yaml

from mlassets.core.config import parse_config, shipped_configs
from mlassets.core.config.serving import OnlineConfig
from mlassets.core.config.typed import ConfigError
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


LABELLED = OnlineConfig(min_requests=3, max_latency_ratio=1.5, max_prediction_shift=0.25, label_key=["origin"],
                        min_labelled=50, max_metric_regression=0.05)
LIKE = _stats([10.0] * 3, [[1.0, 3.0]] * 3)


def _labels(champion: tuple[int, float], candidate: tuple[int, float], metric: str = "mae") -> dict:
    """What ``online_labels.add_labels`` writes: per variant the labelled rows and the metric over them."""
    return {"metric": metric, "variants": {"champion": {"labelled": champion[0], "value": champion[1]},
                                           "candidate": {"labelled": candidate[0], "value": candidate[1]}}}


def test_labelled_rows_within_the_limit_promote_with_the_metric_in_the_reason() -> None:
    found = decide(CHAMPION, LIKE, LABELLED, _labels((80, 10.0), (60, 10.4)))
    assert found.outcome == "promote", found.reason
    assert "MAE 10.40 on 60 labelled rows vs the champion's 10.00 on 80 (+4.0%, limit +5%)" in found.reason
    assert found.figures["metric_candidate"] == 10.4 and found.figures["labelled_champion"] == 80


def test_a_metric_regression_over_the_limit_rolls_back_naming_both_figures() -> None:
    worse = decide(CHAMPION, LIKE, LABELLED, _labels((80, 10.0), (60, 10.6)))
    assert worse.outcome == "rollback"
    assert worse.reason.endswith("MAE 10.60 on 60 labelled rows vs the champion's 10.00 on 80 (+6.0%, limit +5%)")
    fewer_hits = decide(CHAMPION, LIKE, LABELLED, _labels((80, 0.80), (60, 0.75), "accuracy"))  # higher is better
    assert fewer_hits.outcome == "rollback" and "accuracy 0.7500 on 60" in fewer_hits.reason
    assert "limit -5%; higher is better" in fewer_hits.reason
    more_hits = decide(CHAMPION, LIKE, LABELLED, _labels((80, 0.80), (60, 0.90), "accuracy"))
    assert more_hits.outcome == "promote"
    gate_default = dataclasses.replace(LABELLED, max_metric_regression=None)  # unset: the gate's tolerance (1%)
    assert "limit +1%" in decide(CHAMPION, LIKE, gate_default, _labels((80, 10.0), (60, 10.2))).reason
    broken = decide(CHAMPION, LIKE, LABELLED, _labels((80, 10.0), (60, None)))
    assert broken.outcome == "rollback" and "the candidate's MAE on 60 candidate" in broken.reason


def test_too_few_labelled_rows_decide_as_without_labels_or_wait_when_required() -> None:
    short = _labels((80, 10.0), (49, 99.0))  # the candidate far worse, but on 49 rows of the 50 needed
    found = decide(CHAMPION, LIKE, LABELLED, short)
    assert found.outcome == "promote"
    assert "labels not used: 49 candidate and 80 champion labelled rows (min_labelled 50)" in found.reason
    assert decide(CHAMPION, LIKE, LABELLED).reason == decide(CHAMPION, LIKE, RULE).reason  # no labels: as before
    required = dataclasses.replace(LABELLED, require_labels=True)
    waits = decide(CHAMPION, LIKE, required, short)
    assert waits.outcome == "wait" and "the rule waits for 50 labelled rows of each variant" in waits.reason
    assert "labels: no labels yet" in decide(CHAMPION, LIKE, required).reason
    shifted = decide(CHAMPION, _stats([10.0] * 3, [[2.0, 4.0]] * 3), required)  # other limits need no labels
    assert shifted.outcome == "rollback" and "prediction shift" in shifted.reason
    assert decide(CHAMPION, LIKE, required, _labels((50, 10.0), (50, 10.0))).outcome == "promote"


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
