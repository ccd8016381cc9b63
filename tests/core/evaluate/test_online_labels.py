"""The labelled rows' metric of each variant, for every task: a multiclass model's recorded probabilities and a
binary model's P(1) go through the gate's own metric functions, keys typed differently by a file still join."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlassets.core.evaluate.online_labels import LabelSpec, add_labels, key_text, metric_of
from mlassets.core.train.outputs import class_frame
from mlassets.serve.recorder import Recorder


def test_a_multiclass_variant_is_measured_from_the_probabilities_it_served(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    prob = rng.dirichlet([1, 1, 1], 40)
    frame = pd.DataFrame({"route": [f"r{i}" for i in range(40)], "n": np.arange(40, dtype=np.float64)})
    Recorder(tmp_path, ["route", "n"]).record("champion", "1", "t", frame, class_frame(["a", "b", "c"], prob))
    Recorder(tmp_path, ["route", "n"]).record("shadow", "2", "t", frame, class_frame(["a", "b", "c"], prob[::-1]))
    truth = rng.choice(["a", "b", "c"], 40)
    labels = pd.DataFrame({"route": frame["route"], "n": np.arange(40), "class": truth})  # n as ints here
    labels.to_csv(tmp_path / "labels.csv", index=False)
    index = np.searchsorted(["a", "b", "c"], truth)
    for metric, rows in (("logloss", -np.log(prob[np.arange(40), index])),
                         ("accuracy", (prob.argmax(axis=1) == index).astype(float))):
        spec = LabelSpec(["route", "n"], frozenset({"n"}), "class", "multiclass", metric)
        written = add_labels(tmp_path, tmp_path / "labels.csv", spec, "shadow")
        assert written["variants"]["champion"] == {"labelled": 40, "value": pytest.approx(rows.mean()),
                                                   "sums": pytest.approx([40, rows.sum(), (rows * rows).sum()])}
        assert written["variants"]["candidate"]["labelled"] == 40
        # the shadow scored the champion's own request: each row is a pair (candidate, champion)
        candidate = written["variants"]["candidate"]["sums"]
        assert written["paired"]["n"] == 40
        assert written["paired"]["sums"][:2] == pytest.approx([candidate[1], rows.sum()])
        assert written["paired"]["sums"][4] == pytest.approx(sum(
            a * b for a, b in zip(rows, _rows_of(metric, prob[::-1], index), strict=True)))


def _rows_of(metric: str, prob: np.ndarray, index: np.ndarray) -> np.ndarray:
    if metric == "logloss":
        return -np.log(prob[np.arange(len(index)), index])
    return (prob.argmax(axis=1) == index).astype(float)


def test_a_binary_variant_is_measured_by_log_loss_and_keys_compare_as_the_model_reads_them() -> None:
    p, y = np.array([0.9, 0.2, 0.6]), np.array([1.0, 0.0, 0.0])
    expected = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert metric_of("binary", "logloss", y, list(p)) == pytest.approx(expected)
    assert key_text(719, True) == key_text(719.0, True) == key_text("719", True)
    assert key_text(8, False) == key_text(8.0, False) == key_text("8", False) == "8"
    assert key_text(None, False) == key_text(float("nan"), True) == ""
