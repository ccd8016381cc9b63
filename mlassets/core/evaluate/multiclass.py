"""Multiclass model quality from class probabilities: log loss, accuracy, macro-F1, top-label calibration and
precision, recall and F1 per class. Pure numpy; a million rows take milliseconds (``np.bincount``).

A model gives one probability per class it was trained on, in its own order. Both models and the holdout's true
classes are put on one label space (``label_space``: every label of any of them, sorted), where a model's
probability of a class it never saw is 0. Then, per model:

* log loss: mean over rows of ``-ln(max(p_true, EPS))`` (``metric_defs``) with no renormalization; a row whose
  true class the model never saw costs ``-ln(EPS)`` (about 34.5) and is counted in ``unseen_class_rows``;
* accuracy: the share of rows whose most probable class is the true one: the first in sorted order on a tie, and
  only among the classes the model knows (the label it serves), so it does not depend on the label space;
* macro-F1: the unweighted mean of ``2 TP / (2 TP + FP + FN)`` over the classes that occur among the rows' true or
  predicted classes (scikit-learn's label set); a class in neither is left out rather than counted as 0 or 1;
* ECE, top-label: the binary calibration (``calibration``) of the confidence ``max_k p_k`` against "the most
  probable class is the true one": equal-width bins, the row-weighted mean of ``|mean confidence - accuracy|``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mlassets.core.evaluate.calibration import DEFAULT_BINS, calibration_report
from mlassets.core.metric_defs import TASK_METRICS, MeanSums, class_log_losses, get_metric, hits

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

SUM_TOLERANCE = 1e-6  # a row's probabilities must sum to 1 within this
SLICE_METRICS = ("logloss", "accuracy", "macro_f1")  # per slice value; a class's own rows have no macro-F1
CLASS_METRICS = ("precision", "recall", "f1", "predicted")  # per class, for the class table


def label_space(y_labels: Sequence[str], *classes: Sequence[str]) -> list[str]:
    """Every label of the holdout's truth and of each model's classes, sorted (as training sorts its classes)."""
    return sorted({*map(str, y_labels), *(str(c) for group in classes for c in group)})


def true_index(y_labels: Sequence[str], labels: list[str]) -> np.ndarray:
    """The index in ``labels`` of each row's true class."""
    import numpy as np

    index = {c: i for i, c in enumerate(labels)}
    return np.fromiter((index[str(v)] for v in y_labels), dtype=np.intp, count=len(y_labels))


def on_labels(prob: pd.DataFrame, labels: list[str]) -> np.ndarray:
    """A model's probabilities (one column per class it knows) as ``[n, len(labels)]``; 0 for the others."""
    import numpy as np

    out = np.zeros((len(prob), len(labels)), dtype=np.float64)
    position = {c: i for i, c in enumerate(labels)}
    for column in prob.columns:
        out[:, position[str(column)]] = prob[column].to_numpy(dtype=np.float64)
    return out


def p_true(y: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """Each row's probability of its true class (``y``: indices into ``prob``'s columns)."""
    import numpy as np

    return prob[np.arange(len(y)), y] if len(y) else np.empty(0)


def row_values(metric: str, y: np.ndarray, prob: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """A metric's per-row values (``metric_defs``: log loss, or hits for accuracy) of rows of true class ``y``,
    probabilities ``prob`` on the label space and predicted class ``pred``."""
    return get_metric(metric).class_rows(y, pred, p_true(y, prob))


def log_losses(y: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """Per row ``-ln(max(p_true, EPS))`` (NaN stays NaN: the sanity rule reports it)."""
    return class_log_losses(p_true(y, prob))


def predicted(prob: np.ndarray, known: np.ndarray | None = None) -> np.ndarray:
    """The most probable class of each row (the first on a tie) among the ``known`` columns (all without it): a model
    never predicts a class it never saw, even where its own probabilities are all 0 or negative (as it serves)."""
    import numpy as np

    if not len(prob):
        return np.empty(0, dtype=np.intp)
    if known is None or known.all():
        return np.argmax(prob, axis=1)
    columns = np.flatnonzero(known)
    return columns[np.argmax(prob[:, columns], axis=1)]


def confusion(y: np.ndarray, pred: np.ndarray, k: int, codes: np.ndarray | None = None,
              n_codes: int = 1) -> np.ndarray:
    """``[n_codes, k, k]`` counts of (true class, predicted class), per slice code (one block without codes)."""
    import numpy as np

    codes = np.zeros(len(y), dtype=np.intp) if codes is None else codes.astype(np.intp)
    flat = (codes * k + y) * k + pred
    return np.bincount(flat, minlength=n_codes * k * k).reshape(n_codes, k, k)


def f1_per_class(conf: np.ndarray) -> np.ndarray:
    """``2 TP / (2 TP + FP + FN)`` per class of each confusion block; NaN for a class neither true nor predicted."""
    import numpy as np

    tp = np.diagonal(conf, axis1=-2, axis2=-1).astype(np.float64)
    true, pred = conf.sum(axis=-1), conf.sum(axis=-2)  # rows of each true class, of each predicted class
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2.0 * tp / (true + pred)


def macro_f1(conf: np.ndarray) -> np.ndarray:
    """The mean F1 over the classes that occur (as truth or prediction) in each block; NaN for an empty block."""
    import numpy as np

    f1 = f1_per_class(conf)
    present = np.isfinite(f1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(present, f1, 0.0).sum(axis=-1) / present.sum(axis=-1)


def class_metrics(conf: np.ndarray) -> dict[str, np.ndarray]:
    """Per class of one confusion block: precision, recall, F1 (NaN where undefined) and rows predicted."""
    import numpy as np

    tp = np.diagonal(conf).astype(np.float64)
    true, pred = conf.sum(axis=1), conf.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"precision": tp / pred, "recall": tp / true, "f1": f1_per_class(conf),
                "predicted": pred.astype(np.float64)}


def top_label(prob: np.ndarray, y: np.ndarray, known: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(confidence, correct)``: each row's largest probability and whether its class is the true one."""
    import numpy as np

    pred = predicted(prob, known)
    confidence = prob[np.arange(len(y)), pred] if len(y) else np.empty(0)
    return confidence, hits(y, pred)


def calibration(prob: np.ndarray, y: np.ndarray, bins: int = DEFAULT_BINS,
                known: np.ndarray | None = None) -> dict[str, Any]:
    """The top-label calibration report (``{"ece", "bins", "table"}``, as for a binary model)."""
    confidence, correct = top_label(prob, y, known)
    return calibration_report(correct, confidence, bins)


def model_metrics(y: np.ndarray, prob: np.ndarray, known: np.ndarray, bins: int = DEFAULT_BINS) -> dict[str, float]:
    """``logloss``, ``accuracy``, ``macro_f1``, ``ece``, ``n`` and ``unseen_class_rows`` (rows of a true class the
    model never saw; ``known`` marks the classes it gives probabilities for)."""
    import numpy as np

    if not len(y):
        nan = float("nan")
        return {"logloss": nan, "accuracy": nan, "macro_f1": nan, "ece": nan, "n": 0.0, "unseen_class_rows": 0.0}
    pred = predicted(prob, known)
    return {
        **{name: get_metric(name).value(MeanSums.of(row_values(name, y, prob, pred)))
           for name in TASK_METRICS["multiclass"]},
        "macro_f1": float(macro_f1(confusion(y, pred, prob.shape[1]))[0]),
        "ece": float(calibration(prob, y, bins, known)["ece"]),
        "n": float(len(y)),
        "unseen_class_rows": float(np.sum(~known[y])),
    }


def distribution_stats(prob: np.ndarray) -> dict[str, float]:
    """What the sanity rules read of ``[n, k]`` probabilities: rows with a non-finite one, rows with one outside
    [0, 1], rows whose (finite) probabilities do not sum to 1, the largest such error, and the smallest and largest
    probability seen."""
    import numpy as np

    finite = np.isfinite(prob).all(axis=1)
    ok = prob[finite]
    error = np.abs(ok.sum(axis=1) - 1.0) if ok.size else np.empty(0)
    return {"non_finite": int((~finite).sum()), "outside_range": int(((ok < 0) | (ok > 1)).any(axis=1).sum()),
            "sum_not_one": int((error > SUM_TOLERANCE).sum()), "max_sum_error": float(error.max(initial=0.0)),
            "seen_min": float(ok.min()) if ok.size else float("nan"),
            "seen_max": float(ok.max()) if ok.size else float("nan")}
