"""Each metric's one definition: its per-row values, the sums merged over any chunks and the value of all rows at once
agree (and with the textbook formula), in every form a model's output takes, and everything that measures a metric
(evaluation, online test, training's validation) gives the same number on the same rows."""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest

from mlassets.core.config.lifecycle import GateConfig
from mlassets.core.evaluate import multiclass as mc
from mlassets.core.evaluate.accumulate import ModelSums
from mlassets.core.evaluate.metrics import model_metrics
from mlassets.core.evaluate.online_labels import metric_of
from mlassets.core.metric_defs import MEANS, METRICS, OVERALL, TASK_METRICS, MeanSums, get_metric, row_metric
from mlassets.core.train.objectives import VAL_METRIC, validation_losses, validation_metric, validation_value

RNG = np.random.default_rng(7)
N = 1000
CHUNKS = [0, 1, 7, 250, 0, 333, 409]  # sizes, summing to N, empty ones included
Y_REG, P_REG = RNG.normal(10, 5, N), RNG.normal(10, 5, N)
Y_BIN, P_BIN = (RNG.random(N) < 0.3).astype(np.float64), RNG.uniform(0.01, 0.99, N)
Y_CLS, P_CLS = RNG.integers(0, 4, N), RNG.integers(0, 4, N).astype(np.float64)
REFERENCE = {  # the textbook formula of each metric, written apart from the definitions
    "mae": lambda y, p: np.mean(np.abs(p - y)),
    "rmse": lambda y, p: math.sqrt(np.mean((p - y) ** 2)),
    "bias": lambda y, p: np.mean(p - y),
    "logloss": lambda y, p: -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)),
    "brier": lambda y, p: np.mean((p - y) ** 2),
    "mean_predicted": lambda y, p: np.mean(p),
    "positive_rate": lambda y, p: np.mean(y),
    "accuracy": lambda y, p: np.mean(y == p),
}
ROWS = {"mae": (Y_REG, P_REG), "rmse": (Y_REG, P_REG), "bias": (Y_REG, P_REG), "logloss": (Y_BIN, P_BIN),
        "brier": (Y_BIN, P_BIN), "mean_predicted": (Y_BIN, P_BIN), "positive_rate": (Y_BIN, P_BIN),
        "accuracy": (Y_CLS, P_CLS)}


def _chunks(*arrays: np.ndarray) -> typing.Iterator[tuple[np.ndarray, ...]]:
    start = 0
    for size in CHUNKS:
        yield tuple(a[start:start + size] for a in arrays)
        start += size
    assert start == N


def test_every_metric_has_a_reference() -> None:
    assert set(REFERENCE) == set(ROWS) == {*METRICS, *MEANS}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_per_row_values_merged_chunk_sums_and_the_one_shot_value_agree(name: str) -> None:
    metric, (y, p) = row_metric(name), ROWS[name]
    rows = metric.loss(y, p)
    assert rows.shape == (N,)
    merged = MeanSums()
    for y_part, p_part in _chunks(y, p):
        merged = merged + MeanSums.of(metric.loss(y_part, p_part))
    assert merged.n == N
    one_shot = metric.of(y, p)
    assert metric.value(merged) == pytest.approx(one_shot, rel=1e-12)
    assert one_shot == pytest.approx(float(metric.finish(np.mean(rows))), rel=1e-12)
    assert one_shot == pytest.approx(REFERENCE[name](y, p), rel=1e-9)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_per_slice_values_are_the_sums_of_each_value_finished_and_nan_without_rows(name: str) -> None:
    metric, (y, p) = get_metric(name), ROWS[name]
    codes = RNG.integers(0, 5, N)  # slice value 4 gets no row
    codes[codes == 4] = 0
    per_value = metric.of_sums(np.bincount(codes, weights=metric.loss(y, p), minlength=5),
                               np.bincount(codes, minlength=5))
    for k in range(4):
        assert per_value[k] == pytest.approx(metric.of(y[codes == k], p[codes == k]), rel=1e-12)
    assert np.isnan(per_value[4]) and math.isnan(metric.of(y[:0], p[:0]))


@pytest.mark.parametrize("task", sorted(OVERALL))
def test_a_streamed_models_sums_equal_its_metrics_at_once(task: str) -> None:
    y, p = (Y_REG, P_REG) if task == "regression" else (Y_BIN, P_BIN)
    sums = ModelSums(task)
    for y_part, p_part in _chunks(y, p):
        sums.add(y_part, p_part)
    assert sums.metrics() == pytest.approx(model_metrics(task, y, p), rel=1e-12)
    assert {k: v for k, v in model_metrics(task, y, p).items() if k in OVERALL[task]} == pytest.approx(
        {name: REFERENCE[name](y, p) for name in OVERALL[task]}, rel=1e-9)


def test_multiclass_rows_chunks_and_model_metrics_agree_with_the_formulas() -> None:
    prob = RNG.dirichlet(np.ones(4), N)
    y, known = RNG.integers(0, 4, N), np.ones(4, dtype=bool)
    pred = mc.predicted(prob, known)
    whole = mc.model_metrics(y, prob, known)
    reference = {"logloss": -np.mean(np.log(prob[np.arange(N), y])), "accuracy": np.mean(prob.argmax(1) == y)}
    for name in TASK_METRICS["multiclass"]:
        metric = get_metric(name)
        merged = MeanSums()
        for y_part, prob_part, pred_part in _chunks(y, prob, pred):
            merged = merged + MeanSums.of(mc.row_values(name, y_part, prob_part, pred_part))
        assert metric.value(merged) == pytest.approx(whole[name], rel=1e-12)
        assert whole[name] == pytest.approx(reference[name], rel=1e-9)


def test_training_validation_is_the_evaluations_metric_from_raw_outputs() -> None:
    out = RNG.normal(0, 1, N)
    center, scale = 3.0, 2.5
    mae = validation_metric("regression", out, Y_REG, center, scale)
    assert VAL_METRIC["regression"] == "mae" and mae == pytest.approx(METRICS["mae"].of(Y_REG, out * scale + center))
    logits = RNG.normal(0, 3, N)
    assert validation_metric("binary", logits, Y_BIN, 0.0, 1.0) == pytest.approx(
        METRICS["logloss"].of(Y_BIN, 1 / (1 + np.exp(-logits))), rel=1e-9)
    z = RNG.normal(0, 2, (N, 4))
    softmax = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert validation_metric("multiclass", z, Y_CLS.astype(np.float64), 0.0, 1.0) == pytest.approx(
        mc.model_metrics(Y_CLS, softmax, np.ones(4, dtype=bool))["logloss"], rel=1e-9)
    merged = MeanSums()  # the network scores its validation split chunk by chunk
    for z_part, y_part in _chunks(z, Y_CLS.astype(np.float64)):
        merged = merged + MeanSums.of(validation_losses("multiclass", z_part, y_part, 0.0, 1.0))
    assert validation_value("multiclass", merged) == pytest.approx(
        validation_metric("multiclass", z, Y_CLS.astype(np.float64), 0.0, 1.0), rel=1e-12)
    assert math.isnan(validation_value("binary", MeanSums()))


def test_log_loss_from_logits_stays_exact_where_probabilities_would_clip() -> None:
    rows = METRICS["logloss"].logit_rows(np.array([1.0, 0.0]), np.array([-60.0, -60.0]))
    assert rows[0] == pytest.approx(60.0) and 0 < rows[1] < 1e-20  # P(1) = e^-60: clipped at EPS it would be 34.5


def test_the_online_test_measures_a_variant_as_the_evaluation_does() -> None:
    for name, (y, p) in (("logloss", (Y_BIN, P_BIN)), ("brier", (Y_BIN, P_BIN))):
        assert metric_of("binary", name, y, list(p)) == pytest.approx(model_metrics("binary", y, p)[name], rel=1e-12)
    for name in ("mae", "rmse"):
        assert metric_of("regression", name, Y_REG, list(P_REG)) == pytest.approx(
            model_metrics("regression", Y_REG, P_REG)[name], rel=1e-12)


def test_unknown_metrics_and_missing_forms_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown metric 'r2'.*mae"):
        get_metric("r2")
    with pytest.raises(ValueError, match="'mae' does not measure a multiclass model"):
        get_metric("mae").class_rows(Y_CLS, Y_CLS, np.ones(N))
    with pytest.raises(ValueError, match="'brier' is not measured from logits"):
        get_metric("brier").logit_rows(Y_BIN, P_BIN)


def test_the_gates_metric_choices_are_the_defined_metrics() -> None:
    choices = set(typing.get_args(typing.get_type_hints(GateConfig)["main_metric"]))
    assert choices == set(METRICS) == {m for names in TASK_METRICS.values() for m in names}
