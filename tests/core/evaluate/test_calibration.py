"""Calibration of probabilistic (binary) models: hand-checked numbers, and the gate's calibration rule."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import GateConfig, load_config, shipped_configs
from mlassets.core.evaluate.calibration import (
    binary_metrics,
    calibration_report,
    expected_calibration_error,
    reliability_table,
)
from mlassets.core.evaluate.gate import GateResult, evaluate_gate
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.evaluate.scored import evaluate_models, evaluation_of
from mlassets.core.metric_defs import binary_log_losses

BINARY = GateConfig(main_metric="logloss", tolerance=0.02, absolute_max_metric=0.69, calibration_max_ece=0.05,
                    prediction_min=0.0, prediction_max=1.0)


def model_outputs(n: int = 40_000, seed: int = 0):
    """True probabilities q, labels y ~ Bernoulli(q), and a calibrated and an overconfident model."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.15, 0.85, n)
    y = (rng.uniform(size=n) < q).astype(np.float64)
    overconfident = 0.5 + 1.4 * (q - 0.5)  # pushed away from 0.5: ECE about 0.4 * E|q - 0.5| = 0.07
    frame = pd.DataFrame({"segment": rng.choice(["a", "b", "c"], n)})
    return frame, y, q, overconfident


def binary(gate: GateConfig = BINARY, slices: tuple[str, ...] = ("segment",), seed: int = 0):
    """The shipped flights config turned into a binary task with this gate (slices of the synthetic frame)."""
    flights = load_config(shipped_configs()["flights"])
    return dataclasses.replace(flights, gate=gate, training=dataclasses.replace(flights.training, seed=seed),
                               dataset=dataclasses.replace(flights.dataset, task="binary", slices=list(slices)))


def judge(y, cand, champ, frame, seed: int = 0) -> GateResult:
    cfg = binary(seed=seed)
    return evaluate_gate(cfg.gate, evaluate_models(frame, y, cand, champ, cfg))


def test_reliability_table_and_ece_by_hand():
    y = np.array([0, 0, 1, 1, 1, 0])
    p = np.array([0.05, 0.15, 0.15, 0.95, 1.0, 0.92])
    table = reliability_table(y, p)
    assert list(table.columns) == ["bin", "lower", "upper", "count", "mean_predicted", "observed_rate"]
    assert len(table) == 10 and table["count"].sum() == 6
    assert table["count"].tolist() == [1, 2, 0, 0, 0, 0, 0, 0, 0, 3]  # 1.0 lands in the last bin
    assert table.loc[1, "mean_predicted"] == pytest.approx(0.15) and table.loc[1, "observed_rate"] == 0.5
    assert math.isnan(table.loc[5, "mean_predicted"])
    last_mean = (0.95 + 1.0 + 0.92) / 3
    expected = (1 * 0.05 + 2 * abs(0.15 - 0.5) + 3 * abs(last_mean - 2 / 3)) / 6
    assert expected_calibration_error(y, p) == pytest.approx(expected)


def test_log_loss_and_brier_by_hand():
    m = binary_metrics([1, 0], [0.8, 0.4])
    assert m["logloss"] == pytest.approx(-(math.log(0.8) + math.log(0.6)) / 2)
    assert m["brier"] == pytest.approx((0.2**2 + 0.4**2) / 2)
    assert m["n"] == 2 and m["positive_rate"] == 0.5
    assert np.isfinite(binary_log_losses([1, 0], [0.0, 1.0])).all()  # clipped, not infinite


def test_calibrated_model_has_small_ece_and_miscalibrated_one_large():
    _, y, calibrated, overconfident = model_outputs()
    assert expected_calibration_error(y, calibrated) < 0.02
    assert expected_calibration_error(y, overconfident) > 0.06
    table = reliability_table(y, overconfident)
    assert table["count"].sum() == y.size
    report = calibration_report(y, overconfident)
    assert report["ece"] == pytest.approx(expected_calibration_error(y, overconfident))
    assert sum(r["count"] for r in report["table"]) == y.size
    json.dumps(report)


def test_calibration_rule_rejects_a_miscalibrated_model_and_passes_a_calibrated_one():
    frame, y, calibrated, overconfident = model_outputs()
    results = {}
    for name, p in (("calibrated", calibrated), ("overconfident", overconfident)):
        results[name] = judge(y, p, None, frame)
        ece = next(r.value for r in results[name].rules if r.name == "calibration_ece")
        assert ece == pytest.approx(expected_calibration_error(y, p))
    ok, bad = results["calibrated"], results["overconfident"]
    assert ok.passed, ok.reasons()
    (rule,) = [r for r in bad.rules if r.name == "calibration_ece"]
    assert not bad.passed and not rule.passed and rule.limit == 0.05 and rule.value > 0.06
    assert rule.reason == f"calibration error (ECE) {rule.value:.3f} > limit 0.05"


def test_binary_evaluation_has_calibration_and_slices_in_the_main_metric():
    frame, y, calibrated, overconfident = model_outputs(n=5000)
    ev = evaluate_models(frame, y, overconfident, calibrated, binary())
    assert {"logloss", "brier", "ece"} <= set(ev.candidate) and ev.champion is not None
    assert ev.candidate["logloss"] > ev.champion["logloss"]
    assert set(ev.calibration) == {"candidate", "champion"}
    assert list(ev.slice_frame().columns) == ["slice", "value", "n", "candidate_logloss", "candidate_brier",
                                              "champion_logloss", "champion_brier", "change", "ci_low", "ci_high"]
    back = Evaluation.from_json(ev.to_json())
    assert back.task == "binary" and back.calibration == json.loads(json.dumps(ev.calibration))


def test_binary_gate_compares_log_loss_overall_and_per_slice():
    frame, y, calibrated, overconfident = model_outputs()
    result = judge(y, overconfident, calibrated, frame, seed=1)
    main = next(r for r in result.rules if r.name == "main_metric")
    assert not main.passed and main.reason.startswith("log loss 0.")
    failing = [r for r in result.failures() if r.name.startswith("slice segment=")]
    assert failing and failing[0].reason.startswith(f"{failing[0].name}: log loss 0.")
    assert judge(y, calibrated, overconfident, frame).passed


def test_scoring_evaluates_and_gates_a_binary_model_on_calibration():
    cfg = binary()
    frame, y, calibrated, overconfident = model_outputs(n=5000)
    predictions = frame.assign(y=y, candidate=overconfident, champion=np.nan)
    ev = evaluation_of(predictions, cfg, {"candidate": {"single_median_ms": 1.0, "size_bytes": 1000.0}})
    assert ev.task == "binary" and ev.champion is None and set(ev.calibration) == {"candidate"}
    gate = evaluate_gate(cfg.gate, ev)
    assert [r.name for r in gate.rules] == ["sanity_finite", "sanity_range", "absolute_main_metric",
                                            "latency_budget", "model_size", "calibration_ece"]
    assert [r.name for r in gate.failures()] == ["calibration_ece"]
    assert gate.failures()[0].value == pytest.approx(ev.calibration["candidate"]["ece"])
