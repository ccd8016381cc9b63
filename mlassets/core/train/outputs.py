"""A bundle's answer as served: one number per row, or for a multiclass model a table of label and probabilities.

Regression and binary models answer an array (``ModelBundle.predict``: target units, P(1)). A multiclass model
answers a DataFrame: ``prediction`` (the label of the most probable class, the first in the model's class order on
a tie) and ``probability_<class>`` for each class, in the model's class order. The evaluation keeps each model's
answer in the same form, prefixed by the model (``candidate``, ``candidate_probability_<class>``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlassets.core.train.artifact import ModelBundle

PREDICTION = "prediction"
PROBABILITY = "probability_"


def _prefix(model: str) -> str:
    return f"{model}_{PROBABILITY}" if model else PROBABILITY


def class_frame(classes: Sequence[str], prob: np.ndarray, model: str = "") -> pd.DataFrame:
    """``[n, k]`` probabilities as ``prediction`` (or ``model``) and one ``probability_<class>`` column per class."""
    import numpy as np
    import pandas as pd

    labels = np.asarray(list(classes), dtype=object)
    top = labels[np.argmax(prob, axis=1)] if len(prob) else np.empty(0, dtype=object)
    columns = {model or PREDICTION: top}
    columns.update({f"{_prefix(model)}{c}": prob[:, i] for i, c in enumerate(labels)})
    return pd.DataFrame(columns)


def probabilities(frame: pd.DataFrame, model: str = "") -> pd.DataFrame | None:
    """The probability columns of a ``class_frame`` (of ``model``), named by their class; None when it has none."""
    prefix = _prefix(model)
    found = [c for c in frame.columns if isinstance(c, str) and c.startswith(prefix)]
    if not found:
        return None
    return frame[found].rename(columns={c: c[len(prefix):] for c in found}).reset_index(drop=True)


def served(bundle: ModelBundle, rows: pd.DataFrame) -> np.ndarray | pd.DataFrame:
    """What a served model returns for raw rows: ``bundle.predict``, or the class table of a multiclass model."""
    out = bundle.predict(rows)
    return class_frame(bundle.classes, out) if bundle.task == "multiclass" else out
