"""Multiclass metrics against hand computations and plain-loop references, and the multiclass evaluation record:
slices per configured column and per true class, the class table, unseen classes and the sanity counts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig, load_config, parse_config, shipped_configs
from mlassets.core.evaluate import multiclass as mc
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.evaluate.scored import evaluate_models, evaluate_multiclass

CLASSES = ["Adelie", "Chinstrap", "Gentoo"]


def mc_config(slices: tuple[str, ...] = ("island",), **gate: object) -> PipelineConfig:
    """The shipped flights config made a multiclass task: target ``species``, slice columns ``island`` (and
    ``sex``), a gate of ``gate`` on top of loose defaults."""
    data = load_config(shipped_configs()["flights"]).to_dict()
    data["dataset"].update(task="multiclass", target="species", slices=list(slices))
    data["dataset"]["columns"].update(species={"dtype": "str"}, island={"dtype": "str"}, sex={"dtype": "str"})
    data["training"]["loss"] = "auto"
    data["gate"].update({"main_metric": "logloss", "slice_min_rows": 50, "absolute_max_metric": 1.0,
                         "calibration_max_ece": 0.2, **gate})
    return parse_config(data)


def probabilities(y: np.ndarray, classes: list[str], sharpness: float, seed: int) -> pd.DataFrame:
    """Softmax of noise plus ``sharpness`` on the true class: a model that is right more often as it grows."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.0, (len(y), len(classes))) + sharpness * (y[:, None] == np.asarray(classes)[None, :])
    p = np.exp(z)
    return pd.DataFrame(p / p.sum(axis=1, keepdims=True), columns=classes)


def penguins_like(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"island": rng.choice(["Biscoe", "Dream", "Torgersen"], n),
                          "sex": rng.choice(["female", "male"], n)})
    return frame, rng.choice(CLASSES, n, p=[0.45, 0.2, 0.35])


def reference_f1(y: list[str], pred: list[str]) -> dict[str, float]:
    """Per class F1 by counting, over the classes among the truth and the predictions."""
    out = {}
    for c in sorted(set(y) | set(pred)):
        tp = sum(t == c and p == c for t, p in zip(y, pred, strict=True))
        fp = sum(t != c and p == c for t, p in zip(y, pred, strict=True))
        fn = sum(t == c and p != c for t, p in zip(y, pred, strict=True))
        out[c] = 2 * tp / (2 * tp + fp + fn)
    return out


# six rows, three classes: every number below is worked out by hand in the comments
HAND_Y = np.array([0, 0, 1, 1, 2, 2])
HAND_P = np.array([[0.7, 0.2, 0.1],  # A, right, confidence 0.7
                   [0.3, 0.6, 0.1],  # A predicted B: wrong, 0.6
                   [0.1, 0.8, 0.1],  # B, right, 0.8
                   [0.2, 0.2, 0.6],  # B predicted C: wrong, 0.6
                   [0.05, 0.05, 0.9],  # C, right, 0.9
                   [0.0, 0.45, 0.55]])  # C, right, 0.55


def test_metrics_by_hand():
    m = mc.model_metrics(HAND_Y, HAND_P, np.array([True, True, True]))
    assert m["logloss"] == pytest.approx(-np.mean(np.log([0.7, 0.3, 0.8, 0.2, 0.9, 0.55])))
    assert m["accuracy"] == pytest.approx(4 / 6)
    # A: TP 1, FN 1, FP 0 -> 2/3; B: TP 1, FN 1, FP 1 -> 1/2; C: TP 2, FN 0, FP 1 -> 4/5
    assert m["macro_f1"] == pytest.approx((2 / 3 + 1 / 2 + 4 / 5) / 3)
    # top-label bins (0.1 wide): 0.55 right | 0.6, 0.6 wrong | 0.7 right | 0.8 right | 0.9 right
    assert m["ece"] == pytest.approx((0.45 + 2 * 0.6 + 0.3 + 0.2 + 0.1) / 6)
    assert (m["n"], m["unseen_class_rows"]) == (6.0, 0.0)
    per = mc.class_metrics(mc.confusion(HAND_Y, mc.predicted(HAND_P), 3)[0])
    np.testing.assert_allclose(per["precision"], [1.0, 0.5, 2 / 3])
    np.testing.assert_allclose(per["recall"], [0.5, 0.5, 1.0])
    np.testing.assert_allclose(per["predicted"], [1, 2, 3])


def test_log_loss_clips_a_zero_probability_and_keeps_nan():
    y = np.array([0, 1, 2])
    prob = np.array([[0.0, 0.5, 0.5], [0.2, 1.0 + 1e-12, 0.0], [np.nan, np.nan, np.nan]])
    losses = mc.log_losses(y, prob)
    assert losses[0] == pytest.approx(-math.log(1e-15)) and losses[1] == 0.0 and np.isnan(losses[2])


def test_macro_f1_leaves_out_classes_neither_true_nor_predicted():
    y, pred = np.array([0, 1, 0, 1, 1]), np.array([0, 1, 1, 1, 3])  # class 2 nowhere; class 3 only predicted
    conf = mc.confusion(y, pred, 4)
    expected = reference_f1([str(v) for v in y], [str(v) for v in pred])
    assert set(expected) == {"0", "1", "3"} and expected["3"] == 0.0
    assert mc.macro_f1(conf)[0] == pytest.approx(np.mean(list(expected.values())))
    assert mc.macro_f1(mc.confusion(np.array([0, 1]), np.array([0, 1]), 4))[0] == 1.0  # not 0.5 for 2 and 3


def test_macro_f1_and_class_metrics_match_counting_on_random_rows():
    rng = np.random.default_rng(5)
    y, pred = rng.integers(0, 5, 400), rng.integers(0, 5, 400)
    pred[:20] = y[:20]
    expected = reference_f1([str(v) for v in y], [str(v) for v in pred])
    conf = mc.confusion(y, pred, 5)
    assert mc.macro_f1(conf)[0] == pytest.approx(np.mean(list(expected.values())))
    np.testing.assert_allclose(mc.class_metrics(conf[0])["f1"], [expected[str(k)] for k in range(5)])


def test_record_metrics_and_slices_match_references():
    frame, y = penguins_like(600)
    cand, champ = probabilities(y, CLASSES, 2.0, 1), probabilities(y, CLASSES, 1.5, 2)
    ev = evaluate_multiclass(frame, y, cand, champ, mc_config(("island", "sex")))
    idx = mc.true_index(y, CLASSES)
    pc, ph = cand.to_numpy(), champ.to_numpy()
    pred = np.asarray(CLASSES)[pc.argmax(axis=1)]
    assert ev.candidate["accuracy"] == pytest.approx(np.mean(pred == y))
    assert ev.candidate["logloss"] == pytest.approx(np.mean(-np.log(pc[np.arange(600), idx])))
    assert ev.champion["logloss"] == pytest.approx(np.mean(-np.log(ph[np.arange(600), idx])))
    assert [(r.slice, r.value) for r in ev.slices] == [
        ("island", "Biscoe"), ("island", "Dream"), ("island", "Torgersen"), ("sex", "female"), ("sex", "male"),
        ("species", "Adelie"), ("species", "Chinstrap"), ("species", "Gentoo")]  # columns first, then classes
    for row in ev.slices:
        rows = (frame[row.slice] if row.slice != "species" else pd.Series(y)).to_numpy() == row.value
        assert row.n == rows.sum()
        loss_c = np.mean(-np.log(pc[rows, idx[rows]]))
        loss_h = np.mean(-np.log(ph[rows, idx[rows]]))
        assert row.candidate["logloss"] == pytest.approx(loss_c)
        assert row.candidate["accuracy"] == pytest.approx(np.mean(pred[rows] == y[rows]))
        assert row.change == pytest.approx(loss_c / loss_h - 1)
        assert row.ci_low < row.ci_high
        if row.slice == "species":  # a class's own rows: accuracy is its recall, macro-F1 says nothing
            assert "macro_f1" not in row.candidate
        else:
            f1 = reference_f1(list(y[rows]), list(pred[rows]))
            assert row.candidate["macro_f1"] == pytest.approx(np.mean(list(f1.values())))
    f1 = reference_f1(list(y), list(pred))
    assert [c.value for c in ev.classes] == CLASSES
    for c in ev.classes:
        assert c.n == (y == c.value).sum() and c.candidate["f1"] == pytest.approx(f1[c.value])
        assert c.candidate["recall"] == pytest.approx(np.mean(pred[y == c.value] == c.value))
        assert c.candidate["precision"] == pytest.approx(np.mean(y[pred == c.value] == c.value))
    assert ev.calibration["candidate"]["ece"] == ev.candidate["ece"] and ev.calibration["champion"]["bins"] == 10


def test_a_holdout_class_a_model_never_saw_is_scored_counted_and_marked():
    frame, y = penguins_like(300, seed=3)
    y[:7] = "Emperor"  # in the holdout, in neither model
    cand = probabilities(y, CLASSES, 2.0, 1)
    champ = probabilities(y, ["Adelie", "Emperor", "Gentoo"], 2.0, 2)  # knows Emperor, not Chinstrap
    ev = evaluate_multiclass(frame, y, cand, champ, mc_config())
    assert ev.candidate["unseen_class_rows"] == 7 and ev.champion["unseen_class_rows"] == (y == "Chinstrap").sum()
    emperor = next(c for c in ev.classes if c.value == "Emperor")
    assert (emperor.n, emperor.candidate_knows, emperor.champion_knows) == (7, False, True)
    assert emperor.candidate["recall"] == 0.0 and math.isnan(emperor.candidate["precision"])
    row = next(r for r in ev.slices if r.slice == "species" and r.value == "Emperor")
    assert row.candidate["logloss"] == pytest.approx(-math.log(1e-15)) and row.candidate["accuracy"] == 0.0
    assert [c.value for c in ev.classes] == ["Adelie", "Chinstrap", "Emperor", "Gentoo"]


def test_prediction_stats_count_rows_off_the_simplex():
    frame, y = penguins_like(5)
    prob = pd.DataFrame([[0.2, 0.3, 0.5], [np.nan, 0.5, 0.5], [0.5, 0.5, 0.2], [-0.1, 1.1, 0.0], [1.0, 0.0, 0.0]],
                        columns=CLASSES)
    stats = evaluate_multiclass(frame, y, prob, None, mc_config()).predictions
    assert (stats.n, stats.non_finite, stats.outside_range, stats.sum_not_one) == (5, 1, 1, 1)
    assert stats.max_sum_error == pytest.approx(0.2) and (stats.seen_min, stats.seen_max) == (-0.1, 1.1)
    assert (stats.range_min, stats.range_max) == (0.0, 1.0)


def test_record_round_trips_through_json_and_regression_records_keep_their_shape():
    frame, y = penguins_like(200)
    ev = evaluate_multiclass(frame, y, probabilities(y, CLASSES, 2.0, 1), None, mc_config(), champion_version=None)
    back = Evaluation.from_json(ev.to_json())
    assert back.to_json() == ev.to_json() and back.classes == ev.classes and back.champion is None
    assert list(ev.class_frame().columns) == ["class", "n", "candidate_knows", "candidate_precision",
                                              "candidate_recall", "candidate_f1", "candidate_predicted"]
    with pytest.raises(ValueError, match="evaluate_multiclass"):
        evaluate_models(frame, np.zeros(200), np.zeros(200), None, mc_config())


def test_a_missing_class_label_is_refused_naming_the_target():
    frame, y = penguins_like(10)
    y = y.astype(object)
    y[3] = None
    with pytest.raises(ValueError, match="1 holdout rows have no value of the target 'species'"):
        evaluate_multiclass(frame, y, probabilities(np.asarray(y, dtype=str), CLASSES, 1.0, 0), None, mc_config())
