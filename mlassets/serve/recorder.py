"""Every row an online test's variants score, appended to the test's ``predictions.jsonl`` for labels to join.

One JSON line per row: ``trace_id`` (the request's), ``variant`` (``champion``, ``canary`` or ``shadow``),
``version``, ``key`` (the ``serving.online.label_key`` columns' values) and ``prediction`` (a number; a
multiclass model's ``{"label", "probabilities"}``). A request's rows go in one append (``O_APPEND``: replicas
sharing a home do not interleave them); a write that fails is logged and the request is answered all the same.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core.evaluate.online_labels import PREDICTIONS
from mlassets.core.train.outputs import PREDICTION, probabilities
from mlassets.serve.rows import Rows

LOG = logging.getLogger("mlassets.serve")


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


class Recorder:
    """Appends scored rows to ``<folder>/predictions.jsonl``."""

    def __init__(self, folder: Path, key: list[str]) -> None:
        self.path, self.key = folder / PREDICTIONS, list(key)
        self._lock = threading.Lock()
        self._broken = False

    def record(self, variant: str, version: str, trace_id: str, frame: pd.DataFrame | Rows, predicted: Any) -> None:
        keys = [{c: _plain(v) for c, v in zip(self.key, row, strict=True)}
                for row in frame[self.key].itertuples(index=False, name=None)]
        if isinstance(predicted, pd.DataFrame):  # multiclass: the label served and each class's probability
            probs = probabilities(predicted)
            shares = probs.to_dict(orient="records") if probs is not None else [{}] * len(predicted)
            values: list[Any] = [{"label": _plain(label), "probabilities": {k: _plain(p) for k, p in share.items()}}
                                 for label, share in zip(predicted[PREDICTION], shares, strict=True)]
        else:
            values = [_plain(float(v)) for v in np.asarray(predicted, dtype=np.float64).reshape(-1)]
        text = "".join(json.dumps({"trace_id": trace_id, "variant": variant, "version": version, "key": key,
                                   "prediction": value}) + "\n" for key, value in zip(keys, values, strict=True))
        try:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, text.encode())  # one write: the request's lines stay together
                finally:
                    os.close(fd)
        except OSError as exc:
            if not self._broken:
                LOG.error("ALERT: the online test's predictions cannot be recorded to %s (labels will not join "
                          "these rows): %s", self.path, exc)
            self._broken = True
