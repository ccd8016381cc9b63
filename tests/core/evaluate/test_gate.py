"""The promotion gate on synthetic, seeded data: each rule rejects exactly when it should."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import GateConfig, PipelineConfig, load_config, shipped_configs
from mlassets.core.evaluate.bootstrap import GroupBootstrap, bootstrap_relative_change, interval
from mlassets.core.evaluate.gate import GateResult, RuleResult, evaluate_gate
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.evaluate.scored import evaluate_models

CFG = GateConfig(
    main_metric="mae",
    tolerance=0.02,
    slice_min_rows=200,
    slice_max_regression=0.03,
    bootstrap_samples=1000,
    confidence=0.95,
    absolute_max_metric=40.0,
    prediction_min=-120.0,
    prediction_max=1500.0,
)
SLICES = ["origin", "carrier"]


def pipeline(gate: GateConfig, slices: list[str], seed: int = 0, task: str = "regression") -> PipelineConfig:
    """The shipped flights config with this gate, these slice columns and this seed."""
    cfg = load_config(shipped_configs()["flights"])
    return dataclasses.replace(cfg, gate=gate, dataset=dataclasses.replace(cfg.dataset, slices=slices, task=task),
                               training=dataclasses.replace(cfg.training, seed=seed))


def measure(gate: GateConfig, y, cand, champ, frame, slices, seed: int = 0) -> Evaluation:
    return evaluate_models(frame, y, cand, champ, pipeline(gate, slices, seed))


def judge(gate: GateConfig, y, cand, champ, frame, slices, seed: int = 0) -> GateResult:
    """What the pipeline does: one evaluation record of both models, then the gate on that record alone."""
    return evaluate_gate(gate, measure(gate, y, cand, champ, frame, slices, seed))


def make_data(seed: int = 0, sizes: dict[str, int] | None = None):
    """Flights-like rows: truth, and a champion whose errors are N(0, 10)."""
    sizes = sizes or {"UA": 5000, "AA": 5000, "DL": 9980, "ZZ": 20}
    rng = np.random.default_rng(seed)
    carrier = np.concatenate([np.full(k, c) for c, k in sizes.items()])
    n = carrier.size
    frame = pd.DataFrame({"carrier": carrier, "origin": rng.choice(["EWR", "JFK", "LGA"], n)})
    y = rng.normal(10.0, 30.0, n)
    err = rng.normal(0.0, 10.0, n)
    return frame, y, y + err, err, rng


def rule(result: GateResult, name: str) -> RuleResult:
    (found,) = [r for r in result.rules if r.name == name]
    return found


def test_better_overall_but_worse_on_a_large_slice_is_rejected():
    frame, y, champ, err, rng = make_data()
    factor = np.where(frame["carrier"] == "UA", 1.05, 0.9)
    cand = y + factor * err + rng.normal(0.0, 1.0, y.size)
    result = judge(CFG, y, cand, champ, frame, SLICES)
    assert not result.passed and result.has_champion
    assert rule(result, "main_metric").passed
    assert [r.name for r in result.failures()] == ["slice carrier=UA"]
    ua = rule(result, "slice carrier=UA")
    assert ua.value > 0.03 and ua.limit == 0.03
    assert ua.reason.startswith("slice carrier=UA: MAE ")
    assert "vs champion" in ua.reason and "limit +3%" in ua.reason and "% interval [+" in ua.reason
    assert result.summary() == f"rejected: {ua.reason}"


def test_same_regression_on_a_small_slice_does_not_reject():
    frame, y, champ, err, rng = make_data()
    factor = np.where(frame["carrier"] == "ZZ", 1.05, 0.9)  # ZZ has 20 rows < slice_min_rows
    cand = y + factor * err + rng.normal(0.0, 1.0, y.size)
    result = judge(CFG, y, cand, champ, frame, SLICES)
    assert result.passed, result.reasons()
    assert not any("ZZ" in r.name for r in result.rules if r.name.startswith("slice "))
    assert {"slice carrier=UA", "slice carrier=AA", "slice origin=JFK"} <= {r.name for r in result.rules}
    # ... but the result says so: ZZ was not judged, with its rows, and the summary names it
    assert [(u.slice, u.value, u.n, u.min_rows) for u in result.unjudged] == [("carrier", "ZZ", 20, 200)]
    assert rule(result, "unjudged_slices").passed and rule(result, "unjudged_slices").value == 1
    assert result.summary() == "pass; not judged (too few rows): carrier=ZZ (20 rows < 200)"


def test_small_slices_hold_the_candidate_when_the_config_says_so():
    frame, y, champ, err, rng = make_data()
    cand = y + 0.9 * err
    held = judge(dataclasses.replace(CFG, small_slices="hold"), y, cand, champ, frame, SLICES)
    assert not held.passed and [r.name for r in held.failures()] == ["unjudged_slices"]
    assert held.reasons() == ["1 slice value(s) have too few holdout rows to judge (gate.small_slices: hold): "
                              "carrier=ZZ (20 rows < 200)"]
    big_enough = dataclasses.replace(CFG, small_slices="hold", slice_min_rows=20)
    assert judge(big_enough, y, cand, champ, frame, SLICES).passed


def test_noisy_regression_whose_interval_includes_zero_does_not_reject():
    frame, y, champ, err, rng = make_data()
    ua = (frame["carrier"] == "UA").to_numpy()
    # On UA both models have independent heavy-tailed errors; the candidate's are scaled so its slice
    # MAE is exactly 5% worse, a difference the noise cannot distinguish from zero.
    e_h = rng.lognormal(0.0, 1.5, ua.sum()) * rng.choice([-1, 1], ua.sum())
    e_c = rng.lognormal(0.0, 1.5, ua.sum()) * rng.choice([-1, 1], ua.sum())
    e_c *= 1.05 * np.abs(e_h).mean() / np.abs(e_c).mean()
    champ[ua] = y[ua] + e_h
    cand = y + 0.9 * err
    cand[ua] = y[ua] + e_c
    wide = dataclasses.replace(CFG, prediction_min=-1e4, prediction_max=1e4)  # heavy tails are not the point
    result = judge(wide, y, cand, champ, frame, SLICES)
    slice_rule = rule(result, "slice carrier=UA")
    assert slice_rule.value == pytest.approx(0.05) and slice_rule.passed
    assert result.passed, result.reasons()
    boot = bootstrap_relative_change(np.abs(e_c), np.abs(e_h), 1000, np.random.default_rng(0))
    assert np.quantile(boot, 0.025) < 0 < np.quantile(boot, 0.975)


def test_candidate_within_tolerance_passes():
    frame, y, champ, err, rng = make_data()
    cand = y + 1.01 * err
    result = judge(CFG, y, cand, champ, frame, SLICES)
    assert result.passed and result.summary().startswith("pass") and result.failures() == []
    main = rule(result, "main_metric")
    assert main.reason == "" and main.value <= main.limit
    assert {r.name for r in result.rules} >= {"sanity_finite", "sanity_range", "main_metric"}


def test_candidate_ten_percent_worse_fails_main_metric_with_both_numbers():
    frame, y, champ, err, _ = make_data()
    cand = y + 1.1 * err
    result = judge(CFG, y, cand, champ, frame, SLICES)
    main = rule(result, "main_metric")
    assert not main.passed and not result.passed
    cand_mae, champ_mae = np.abs(cand - y).mean(), np.abs(champ - y).mean()
    assert main.value == pytest.approx(cand_mae) and main.limit == pytest.approx(champ_mae * 1.02)
    assert main.reason == (f"MAE {cand_mae:.2f} vs champion {champ_mae:.2f} (+10.0%, limit +2%)")
    assert result.summary().startswith(f"rejected: {main.reason} (+")


def test_rmse_main_metric_is_labelled():
    frame, y, champ, err, _ = make_data()
    result = judge(GateConfig(main_metric="rmse"), y, y + 1.2 * err, champ, frame, [])
    main = rule(result, "main_metric")
    assert not main.passed and main.reason.startswith("RMSE ")


def test_first_model_uses_the_absolute_threshold():
    frame, y, _, err, _ = make_data()
    cand = y + err  # MAE about 8
    ok = judge(CFG, y, cand, None, frame, SLICES)
    assert ok.passed and not ok.has_champion and ok.unjudged == [] and ok.gated_against == "none"
    assert [r.name for r in ok.rules] == ["sanity_finite", "sanity_range", "absolute_main_metric"]
    strict = GateConfig(absolute_max_metric=5.0)
    bad = judge(strict, y, cand, None, frame, SLICES)
    assert not bad.passed
    absolute = rule(bad, "absolute_main_metric")
    assert absolute.limit == 5.0 and absolute.value > 5.0 and "5.00" in absolute.reason


def test_nan_prediction_fails_sanity_finite():
    frame, y, champ, err, _ = make_data()
    cand = y + 0.9 * err
    cand[[3, 7]] = [np.nan, np.inf]
    result = judge(CFG, y, cand, champ, frame, SLICES)
    finite = rule(result, "sanity_finite")
    assert not result.passed and not finite.passed and finite.value == 2 and finite.limit == 0
    assert "2 of" in finite.reason


def test_out_of_range_prediction_fails_sanity_range():
    frame, y, champ, err, _ = make_data()
    cand = y + 0.9 * err
    cand[0] = 2000.0
    result = judge(CFG, y, cand, champ, frame, SLICES)
    rng_rule = rule(result, "sanity_range")
    assert not result.passed and not rng_rule.passed
    assert rng_rule.value == pytest.approx(1 / y.size)
    assert "[-120, 1500]" in rng_rule.reason and "2000.00" in rng_rule.reason
    assert rule(result, "sanity_finite").passed


def test_gate_result_json_round_trip():
    frame, y, champ, err, _ = make_data()
    result = judge(CFG, y, y + 1.1 * err, champ, frame, SLICES)
    assert len(result.failures()) > 1
    text = result.to_json()
    json.loads(text)
    back = GateResult.from_json(text)
    assert back == result
    assert GateResult.from_dict(result.to_dict()) == result
    assert back.summary() == result.summary() and back.summary().endswith(
        f"(+{len(result.reasons()) - 1} more)"
    )


def test_gate_is_deterministic_for_a_seed():
    frame, y, champ, err, rng = make_data()
    cand = y + np.where(frame["carrier"] == "UA", 1.05, 0.9) * err + rng.normal(0.0, 1.0, y.size)
    first = judge(CFG, y, cand, champ, frame, SLICES, seed=3)
    assert first == judge(CFG, y, cand, champ, frame, SLICES, seed=3)


def test_categorical_slice_columns_give_the_same_verdict():
    frame, y, champ, err, rng = make_data()
    cand = y + np.where(frame["carrier"] == "UA", 1.05, 0.9) * err + rng.normal(0.0, 1.0, y.size)
    plain = judge(CFG, y, cand, champ, frame, SLICES, seed=5)
    assert judge(CFG, y, cand, champ, frame.astype("category"), SLICES, seed=5) == plain


def test_bootstrap_of_many_rows_is_chunked_and_finite():
    rng = np.random.default_rng(1)
    a, b = np.abs(rng.normal(size=30_000)), np.abs(rng.normal(size=30_000))
    boot = bootstrap_relative_change(a, b, 1000, np.random.default_rng(0))
    assert boot.shape == (1000,) and np.isfinite(boot).all()
    assert np.quantile(boot, 0.025) < 0 < np.quantile(boot, 0.975)  # same distribution: zero is inside


def test_group_bootstrap_matches_the_row_bootstrap():
    rng = np.random.default_rng(2)
    n = 20_000
    champ = np.abs(rng.lognormal(0.0, 1.0, n))
    cand = 1.04 * champ * rng.lognormal(0.0, 0.3, n)
    exact = bootstrap_relative_change(cand, champ, 1000, np.random.default_rng(0))
    group = GroupBootstrap(n, 1000, seed=0)
    codes = np.zeros(n, dtype=np.intp)
    boot = group.relative_change(group.group_sums(codes, 1, cand), group.group_sums(codes, 1, champ))
    assert boot.shape == (1000, 1) and (group.weights.sum(1) == group.groups).all()
    assert boot.std() == pytest.approx(exact.std(), rel=0.15)
    assert boot.mean() == pytest.approx(exact.mean(), abs=0.3 * exact.std())
    (lo,), (hi,) = interval(boot, 0.95)
    assert lo == pytest.approx(np.quantile(exact, 0.025), abs=0.5 * exact.std())
    assert hi == pytest.approx(np.quantile(exact, 0.975), abs=0.5 * exact.std())


def test_every_slice_of_a_million_rows_regressing_is_judged():
    rng = np.random.default_rng(4)
    n = 1_000_000
    frame = pd.DataFrame({"dest": rng.integers(0, 80, n), "carrier": rng.integers(0, 17, n),
                          "origin": rng.integers(0, 3, n)})
    y = rng.normal(10.0, 30.0, n)
    err = rng.normal(0.0, 10.0, n)
    result = judge(CFG, y, y + 1.08 * err, y + err, frame, ["dest", "carrier", "origin"])  # speed: bench/
    slices = [r for r in result.rules if r.name.startswith("slice ")]
    assert len(slices) == 100 and not any(r.passed for r in slices)


def test_rmse_slices_are_compared_in_rmse():
    frame, y, champ, err, rng = make_data()
    cand = y + np.where(frame["carrier"] == "UA", 1.1, 0.9) * err
    result = judge(dataclasses.replace(CFG, main_metric="rmse"), y, cand, champ, frame, SLICES)
    ua = rule(result, "slice carrier=UA")
    rmse = lambda p: np.sqrt(np.mean((p - y)[frame["carrier"] == "UA"] ** 2))  # noqa: E731
    assert not ua.passed and ua.value == pytest.approx(rmse(cand) / rmse(champ) - 1)
    assert ua.reason.startswith("slice carrier=UA: RMSE ")


def test_mismatched_lengths_raise():
    frame, y, champ, err, _ = make_data()
    with pytest.raises(ValueError, match="rows"):
        judge(CFG, y, (y + err)[:-1], champ, frame, SLICES)


def test_the_gate_recomputes_nothing_it_reads_the_record():
    frame, y, champ, err, rng = make_data()
    cand = y + np.where(frame["carrier"] == "UA", 1.05, 0.9) * err + rng.normal(0.0, 1.0, y.size)
    evaluation = measure(CFG, y, cand, champ, frame, SLICES)
    again = Evaluation.from_json(evaluation.to_json())  # what the next asset receives
    assert evaluate_gate(CFG, again) == evaluate_gate(CFG, evaluation)
    ua = next(r for r in evaluation.slices if (r.slice, r.value) == ("carrier", "UA"))
    moved = dataclasses.replace(ua, ci_low=-0.01)  # the record says the interval includes zero: the gate obeys
    edited = dataclasses.replace(evaluation, slices=[moved if r is ua else r for r in evaluation.slices])
    assert not evaluate_gate(CFG, evaluation).passed and evaluate_gate(CFG, edited).passed


def test_rows_dropped_for_a_missing_target_are_reported_by_the_gate() -> None:
    frame, y, champ = make_data(seed=3)[:3]
    evaluation = dataclasses.replace(measure(CFG, y, champ, None, frame, SLICES), dropped_missing_target=4)
    gate = evaluate_gate(CFG, evaluation)
    assert gate.dropped_missing_target == 4 and "4 rows without a target were left out" in gate.summary()
    assert GateResult.from_json(gate.to_json()).dropped_missing_target == 4
    assert "without a target" not in evaluate_gate(CFG, measure(CFG, y, champ, None, frame, SLICES)).summary()
