"""The gate on multiclass evaluation records (seeded synthetic probabilities): the main metric in either direction,
the slice rule per column value and per class with its interval, calibration, sanity and absolute thresholds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlassets.core.evaluate.gate import GateResult, RuleResult, evaluate_gate
from mlassets.core.evaluate.scored import evaluate_multiclass
from tests.core.evaluate.test_multiclass import CLASSES, mc_config, penguins_like, probabilities


def judge(y, cand, champ, frame, **gate) -> GateResult:
    cfg = mc_config(**gate)
    return evaluate_gate(cfg.gate, evaluate_multiclass(frame, y, cand, champ, cfg))


def rule(result: GateResult, name: str) -> RuleResult:
    (found,) = [r for r in result.rules if r.name == name]
    return found


def worse_on(y: np.ndarray, prob: pd.DataFrame, cls: str, seed: int) -> pd.DataFrame:
    """``prob`` with the rows of class ``cls`` replaced by a much blunter model's."""
    blunt = probabilities(y, CLASSES, 0.3, seed)
    rows = y == cls
    out = prob.copy()
    out.loc[rows] = blunt.loc[rows].to_numpy()
    return out


@pytest.fixture(scope="module")
def data():
    frame, y = penguins_like(3000, seed=11)
    return frame, y, probabilities(y, CLASSES, 2.5, 1)


def test_a_class_that_regresses_rejects_through_its_slice_and_the_others_pass(data):
    frame, y, champ = data
    frame = frame.assign(island=np.where(y == "Chinstrap", "Dream", frame["island"]))  # as on the real islands
    cand = worse_on(y, champ, "Chinstrap", 2)
    result = judge(y, cand, champ, frame, tolerance=1.0, slice_max_regression=0.03)
    chinstrap, dream = rule(result, "slice species=Chinstrap"), rule(result, "slice island=Dream")
    assert not result.passed and result.failures() == [dream, chinstrap]
    assert chinstrap.value > 0.5 and chinstrap.limit == 0.03 and chinstrap.bound == "max"
    assert "slice species=Chinstrap: log loss" in chinstrap.reason and "% interval [+" in chinstrap.reason
    assert rule(result, "slice species=Adelie").passed and rule(result, "slice island=Biscoe").passed
    assert rule(result, "main_metric").passed  # 100% tolerance overall: only the slices catch it


def test_log_loss_main_metric_in_both_directions(data):
    frame, y, champ = data
    worse = judge(y, probabilities(y, CLASSES, 1.5, 3), champ, frame, tolerance=0.05, slice_max_regression=5.0)
    main = rule(worse, "main_metric")
    assert not main.passed and main.bound == "max" and main.value > main.limit
    assert main.reason.startswith("log loss ") and "vs champion" in main.reason and "limit +5%" in main.reason
    better = judge(y, probabilities(y, CLASSES, 3.5, 3), champ, frame, tolerance=0.05)
    assert better.passed, better.reasons()


def test_accuracy_is_higher_is_better_overall_and_per_slice(data):
    frame, y, champ = data
    cand = worse_on(y, champ, "Gentoo", 4)
    result = judge(y, cand, champ, frame, main_metric="accuracy", tolerance=0.01, slice_max_regression=0.03)
    main, gentoo = rule(result, "main_metric"), rule(result, "slice species=Gentoo")
    ev = evaluate_multiclass(frame, y, cand, champ, mc_config(main_metric="accuracy"))
    assert main.bound == "min" and main.limit == pytest.approx(ev.champion["accuracy"] * 0.99)
    assert not main.passed and main.value < main.limit and "higher is better" in main.reason
    assert gentoo.bound == "min" and gentoo.limit == -0.03 and gentoo.value < -0.3 and not gentoo.passed
    assert "higher is better" in gentoo.reason and "interval [-" in gentoo.reason
    assert rule(result, "slice species=Adelie").passed
    better = judge(y, probabilities(y, CLASSES, 3.5, 5), champ, frame, main_metric="accuracy", tolerance=0.01)
    assert rule(better, "main_metric").passed and rule(better, "main_metric").value > rule(better, "main_metric").limit
    assert all(r.passed for r in better.rules if r.name.startswith("slice "))  # better accuracy never rejects


def test_absolute_thresholds_without_a_champion(data):
    frame, y, champ = data
    weak = probabilities(y, CLASSES, 0.5, 6)
    by_loss = judge(y, weak, None, frame, absolute_max_metric=0.8)
    absolute = rule(by_loss, "absolute_main_metric")
    assert not absolute.passed and absolute.limit == 0.8 and "above the absolute limit 0.8000" in absolute.reason
    assert not any(r.name.startswith("slice ") for r in by_loss.rules)  # nothing to compare with
    by_accuracy = judge(y, weak, None, frame, main_metric="accuracy", absolute_min_metric=0.9)
    absolute = rule(by_accuracy, "absolute_main_metric")
    assert not absolute.passed and absolute.bound == "min" and absolute.limit == 0.9
    assert "below the absolute minimum 0.9000" in absolute.reason
    assert judge(y, champ, None, frame, main_metric="accuracy", absolute_min_metric=0.6).passed


def test_an_overconfident_model_fails_the_top_label_calibration_rule(data):
    frame, y, _ = data
    rng = np.random.default_rng(8)
    right = rng.random(len(y)) < 0.7  # right 70% of the time, always 98% sure
    top = np.where(right, y, np.asarray(CLASSES)[(np.searchsorted(CLASSES, y) + 1) % 3])
    prob = pd.DataFrame(np.where(np.asarray(CLASSES)[None, :] == top[:, None], 0.98, 0.01), columns=CLASSES)
    result = judge(y, prob, None, frame, calibration_max_ece=0.05, absolute_max_metric=5.0)
    ece = rule(result, "calibration_ece")
    assert not ece.passed and ece.value == pytest.approx(0.28, abs=0.03) and ece.limit == 0.05
    assert result.failures() == [ece]


def test_sanity_rules_on_probabilities(data):
    frame, y, champ = data
    bad = champ.copy()
    bad.iloc[0] = [np.nan, 0.5, 0.5]
    bad.iloc[1] = [0.5, 0.5, 0.5]
    bad.iloc[2] = [-0.2, 1.2, 0.0]
    result = judge(y, bad, champ, frame, tolerance=1.0)
    assert not rule(result, "sanity_finite").passed and rule(result, "sanity_finite").value == 1
    assert not rule(result, "sanity_range").passed
    total = rule(result, "sanity_sum")
    assert not total.passed and total.value == 1 and "do not sum to 1 (largest error 0.5)" in total.reason
    assert rule(judge(y, champ, champ, frame), "sanity_sum").passed


def test_a_class_the_candidate_never_saw_is_said_in_the_rule_that_fails(data):
    frame, y, champ = data
    known = [c for c in CLASSES if c != "Chinstrap"]
    cand = probabilities(y, known, 2.5, 9)
    result = judge(y, cand, None, frame, absolute_max_metric=1.0)
    absolute = rule(result, "absolute_main_metric")
    rows = int((y == "Chinstrap").sum())
    assert not absolute.passed
    assert f"{rows} holdout rows are of classes the candidate never saw in training (Chinstrap)" in absolute.reason


def test_gate_result_with_bounds_round_trips(data):
    frame, y, champ = data
    result = judge(y, worse_on(y, champ, "Gentoo", 4), champ, frame, main_metric="accuracy")
    assert GateResult.from_json(result.to_json()) == result
    assert {r.bound for r in result.rules} == {"max", "min"}  # sanity and budget rules stay maximums
