"""Every metric, defined once: its per-row value, the sums it merges across chunks, and its finish.

A metric is ``finish(sum of per-row values / rows)``: a mean of per-row values (MAE: absolute errors; RMSE: the root
of the mean squared error; accuracy: the mean of hits). So rows split into any chunks give the same value from merged
``MeanSums``, and a slice value's metric is its rows' sums (``np.bincount``) finished the same way (``of_sums``). A
row's value has one form per kind of model output:

* ``loss(y, p)``: a value prediction (regression) or the probability of 1 (binary, target 0/1);
* ``class_loss(y, pred, p_true)``: a multiclass model, from the true class, the predicted class and the probability
  the model gave the true class (``EPS`` for a class it never saw: ``-ln(EPS)``, about 34.5);
* ``logit_loss(y, z)``: raw outputs, as training scores its validation split: log loss from logits (1-D: binary,
  ``[n, k]``: multiclass with class indices), exact for any logit, so never clipped.

The evaluation (overall, per slice, chunk by chunk), the naive baseline, the predictions file's error, the online
test's labelled rows and training's validation loss all read these. A new metric is one ``Metric`` here (and, for the
gate to judge it, its name in ``TASK_METRICS`` and in ``gate.main_metric``'s choices). Shared by every stage: this
module imports none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

EPS = 1e-15  # probabilities are clipped to [EPS, 1 - EPS] (binary) or at EPS (multiclass) for the log loss
TASK_METRICS = {"regression": ("mae", "rmse"), "binary": ("logloss", "brier"),
                "multiclass": ("logloss", "accuracy")}  # the gate's main metric per task (the first: its default)
OVERALL = {"regression": ("mae", "rmse", "bias"),
           "binary": ("logloss", "brier", "mean_predicted", "positive_rate")}  # means in a model's overall record

Rows = Callable[["np.ndarray", "np.ndarray"], "np.ndarray"]
ClassRows = Callable[["np.ndarray", "np.ndarray", "np.ndarray"], "np.ndarray"]


def errors(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Prediction minus truth (mean: the bias)."""
    return p - y


def abs_errors(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.abs(p - y)


def squared_errors(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    d = p - y
    return d * d


def hits(y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """1.0 where the predicted class (index or label) is the true one, else 0.0 (mean: accuracy)."""
    import numpy as np

    return (y == pred).astype(np.float64)


def binary_log_losses(y_true: Any, prob: Any) -> np.ndarray:
    """Per row ``-(y ln p + (1 - y) ln(1 - p))`` with ``p`` clipped to [EPS, 1 - EPS] (NaN stays NaN: the sanity
    rule reports it)."""
    import numpy as np

    y = np.asarray(y_true, dtype=np.float64).reshape(-1)
    p = np.asarray(prob, dtype=np.float64).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"y_true has {y.size} rows but the probabilities have {p.size}")
    p = np.clip(p, EPS, 1.0 - EPS)
    return -(y * np.log(p) + (1.0 - y) * np.log1p(-p))


def class_log_losses(p_true: np.ndarray) -> np.ndarray:
    """Per row ``-ln(max(p_true, EPS))``, no renormalization (NaN stays NaN)."""
    import numpy as np

    return -np.log(np.clip(p_true, EPS, 1.0))


def logit_log_losses(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The log loss of logits: binary (1-D) ``ln(1 + e^z) - y z``; multiclass (``[n, k]``, ``y`` class indices)
    ``logsumexp(z) - z_y``."""
    import numpy as np

    if z.ndim == 1:
        return np.logaddexp(0.0, z) - y * z
    top = z.max(axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(z - top).sum(axis=1))
    return lse - z[np.arange(len(y)), y.astype(np.int64)]


def _class_log_loss(y: np.ndarray, pred: np.ndarray, p_true: np.ndarray) -> np.ndarray:
    return class_log_losses(p_true)


def _class_hit(y: np.ndarray, pred: np.ndarray, p_true: np.ndarray) -> np.ndarray:
    return hits(y, pred)


@dataclass(frozen=True)
class MeanSums:
    """What a chunk leaves of a metric's per-row values: rows and their sum; chunks merge by adding."""

    n: int = 0
    total: float = 0.0

    @classmethod
    def of(cls, values: np.ndarray) -> MeanSums:
        import numpy as np

        return cls(int(np.size(values)), float(np.sum(values)))

    def __add__(self, other: MeanSums) -> MeanSums:
        return MeanSums(self.n + other.n, self.total + other.total)


@dataclass(frozen=True)
class Metric:
    """``finish(mean of per-row values)``, lower is better unless ``higher_is_better``; ``digits`` for messages."""

    name: str
    label: str
    loss: Rows  # the per-row value of a value or P(1) prediction (a loss, or a hit for accuracy)
    class_loss: ClassRows | None = None  # multiclass
    logit_loss: Rows | None = None  # from raw outputs (training's validation)
    root: bool = False  # the metric is the square root of the mean (RMSE)
    digits: int = 2
    slice_digits: int = 1
    higher_is_better: bool = False

    def finish(self, mean: Any) -> Any:
        import numpy as np

        return np.sqrt(mean) if self.root else mean

    def of_sums(self, total: Any, n: Any) -> Any:
        """The metric of rows whose per-row values sum to ``total`` (scalars, or arrays: one per slice value); NaN
        where ``n`` is 0."""
        import numpy as np

        with np.errstate(invalid="ignore", divide="ignore"):
            return self.finish(np.divide(total, n))

    def value(self, sums: MeanSums) -> float:
        """The metric of merged sums."""
        return float(self.of_sums(sums.total, sums.n))

    def of(self, y: np.ndarray, p: np.ndarray) -> float:
        """The metric of rows at once (NaN for none): the sums of one chunk, finished."""
        return self.value(MeanSums.of(self.loss(y, p)))

    def class_rows(self, y: np.ndarray, pred: np.ndarray, p_true: np.ndarray) -> np.ndarray:
        """``class_loss``; a ValueError for a metric without a multiclass form."""
        if self.class_loss is None:
            raise ValueError(f"metric {self.name!r} does not measure a multiclass model "
                             f"(those that do: {', '.join(TASK_METRICS['multiclass'])})")
        return self.class_loss(y, pred, p_true)

    def logit_rows(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """``logit_loss``; a ValueError for a metric without a form from logits."""
        if self.logit_loss is None:
            raise ValueError(f"metric {self.name!r} is not measured from logits (log loss is)")
        return self.logit_loss(y, z)

    def fmt(self, value: float, for_slice: bool = False) -> str:
        return f"{value:.{self.slice_digits if for_slice else self.digits}f}"


METRICS: dict[str, Metric] = {  # the metrics a gate can judge
    "mae": Metric("mae", "MAE", abs_errors),
    "rmse": Metric("rmse", "RMSE", squared_errors, root=True),
    "logloss": Metric("logloss", "log loss", binary_log_losses, _class_log_loss, logit_log_losses, digits=4,
                      slice_digits=4),
    "brier": Metric("brier", "Brier score", squared_errors, digits=4, slice_digits=4),
    "accuracy": Metric("accuracy", "accuracy", hits, _class_hit, digits=4, slice_digits=3, higher_is_better=True),
}
MEANS: dict[str, Metric] = {  # the other means of a model's overall record
    "bias": Metric("bias", "bias", errors),
    "mean_predicted": Metric("mean_predicted", "mean prediction", lambda y, p: p, digits=4),
    "positive_rate": Metric("positive_rate", "positive rate", lambda y, p: y, digits=4),
}


def get_metric(name: str) -> Metric:
    """A gate metric by name; a ValueError naming the known ones for any other."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r} (known: {', '.join(METRICS)})")
    return METRICS[name]


def row_metric(name: str) -> Metric:
    """Any mean of per-row values by name: a gate metric or one of ``MEANS``."""
    return MEANS[name] if name in MEANS else get_metric(name)
