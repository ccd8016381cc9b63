"""Labels that arrive after an online test's requests, joined by a row key to what each variant predicted.

While a test runs with ``serving.online.label_key``, the endpoint appends every row either variant scored to
``$MLASSETS_HOME/serving/online/<model>/<test seq>/predictions.jsonl`` (one JSON line per row: the request's
trace id, the variant, its version, the key columns' values and the prediction). ``add_labels`` reads a file of
labels (the key columns and the dataset's target, CSV or Parquet), keeps them beside the predictions
(``labels.parquet``, the newest label of a key wins) and writes ``labelled.json``: per variant the rows that have
a label, the gate's main metric over them (its ``metric_defs`` definition, as the evaluation's) and the sums of its
per-row values (``sequential.Sums``); for a shadow, which scored the champion's own requests, also the sums of the
pairs (the same request and key scored by both: ``sequential.PairSums``). The endpoint's rule reads them.

Keys are compared as text that does not depend on how a file typed them: numeric columns as floats (719, 719.0
and "719.0" agree), categorical ones as the preprocessor compares categories (8 and 8.0 read as "8"), a missing
value as "".
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core import paths
from mlassets.core.evaluate import multiclass
from mlassets.core.evaluate.sequential import PairSums, Sums
from mlassets.core.features.preprocess import category_key
from mlassets.core.metric_defs import MeanSums, get_metric

PREDICTIONS = "predictions.jsonl"
LABELS = "labels.parquet"
LABELLED = "labelled.json"
KEY, Y = "_key", "_y"


class LabelsError(ValueError):
    """A labels file (or the test's recorded predictions) that cannot be joined; nothing was written."""


@dataclass(frozen=True)
class LabelSpec:
    """What a join needs of the config: the key columns, which are numeric, the target, the task, the metric."""

    key: list[str]
    numeric: frozenset[str]
    target: str
    task: str
    metric: str


def online_dir(model: str, seq: int) -> Path:
    return paths.home() / "serving" / "online" / model / str(seq)


def key_text(value: Any, numeric: bool) -> str:
    if value is None or (isinstance(value, float | np.floating) and math.isnan(value)) or value is pd.NA:
        return ""
    return repr(float(value)) if numeric else category_key(value)


def _keys(frame: pd.DataFrame, spec: LabelSpec) -> pd.Series:
    parts = [frame[c].map(lambda v, n=c in spec.numeric: key_text(v, n)) for c in spec.key]
    return pd.Series(["\x1f".join(t) for t in zip(*parts, strict=True)], index=frame.index, dtype=object)


def read_predictions(folder: Path, spec: LabelSpec) -> pd.DataFrame:
    """The rows the endpoint recorded: ``variant``, ``prediction`` and the canonical key."""
    path = folder / PREDICTIONS
    if not path.is_file() or not path.stat().st_size:
        raise LabelsError(f"no predictions are recorded for this test yet ({path}); the endpoint writes them "
                          "while it serves the test with serving.online.label_key set")
    lines = []
    for text in path.read_text().splitlines():
        try:
            lines.append(json.loads(text))
        except ValueError:  # a line torn by a crash mid-write: that row is not counted
            continue
    if not lines:
        raise LabelsError(f"no predictions are recorded for this test yet ({path})")
    recorded = sorted(lines[0]["key"])
    if recorded != sorted(spec.key):
        raise LabelsError(f"the test's predictions were recorded with the key {recorded!r}, the config's "
                          f"serving.online.label_key is {spec.key!r}")
    frame = pd.DataFrame([line["key"] for line in lines], columns=spec.key)
    return pd.DataFrame({"variant": [line["variant"] for line in lines], KEY: _keys(frame, spec),
                         "trace_id": [line.get("trace_id", "") for line in lines],
                         "prediction": [line["prediction"] for line in lines]})


def read_labels(file: Path, spec: LabelSpec) -> tuple[pd.DataFrame, int]:
    """``(labels, rows without a target)`` of a CSV or Parquet file: one row per key (``KEY``, ``Y``)."""
    if not file.is_file():
        raise LabelsError(f"labels file {str(file)!r} does not exist")
    suffix = file.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise LabelsError(f"labels file {file.name!r}: must be .csv or .parquet, got {suffix or 'no suffix'!r}")
    try:
        frame = pd.read_csv(file) if suffix == ".csv" else pd.read_parquet(file)
    except Exception as exc:  # noqa: BLE001 - any reader's failure is a refusal naming the file
        raise LabelsError(f"labels file {file.name!r} could not be read: {exc}") from None
    for column in [*spec.key, spec.target]:
        if column not in frame.columns:
            role = "the target" if column == spec.target else "a key column, serving.online.label_key"
            raise LabelsError(f"labels file {file.name!r} has no column {column!r} ({role}); it has "
                              f"{', '.join(map(str, frame.columns))}")
    present = frame[frame[spec.target].notna()]
    if present.empty:
        raise LabelsError(f"labels file {file.name!r}: column {spec.target!r} has no value in any of its "
                          f"{len(frame)} rows")
    if spec.task == "multiclass":
        y = present[spec.target].map(category_key)
    else:
        y = pd.to_numeric(present[spec.target], errors="coerce")
        if y.isna().any():
            bad = present[spec.target][y.isna()].iloc[0]
            raise LabelsError(f"labels file {file.name!r}: column {spec.target!r} must hold numbers, got {bad!r}")
    labels = pd.DataFrame({KEY: _keys(present, spec), Y: y.to_numpy()})
    clash = labels.groupby(KEY)[Y].nunique()
    if (clash > 1).any():
        key = clash[clash > 1].index[0].replace("\x1f", ", ")
        raise LabelsError(f"labels file {file.name!r}: the key ({', '.join(spec.key)}) = ({key}) has two different "
                          f"{spec.target!r} values")
    return labels.drop_duplicates(KEY, keep="last"), len(frame) - len(present)


def row_values(task: str, metric: str, y: np.ndarray, predictions: list[Any]) -> np.ndarray:
    """The gate metric's per-row values of one variant's labelled rows (a loss, or a hit for accuracy): the metric
    is ``finish(mean(values))``; a missing prediction is NaN."""
    if not len(y):
        return np.empty(0)
    if task != "multiclass":
        p = np.asarray([math.nan if v is None else v for v in predictions], dtype=np.float64)
        return get_metric(metric).loss(np.asarray(y, dtype=np.float64), p)
    prob = pd.DataFrame([p["probabilities"] for p in predictions])
    labels = multiclass.label_space(list(y), list(prob.columns))
    known = np.isin(labels, [str(c) for c in prob.columns])
    index, matrix = multiclass.true_index(list(y), labels), multiclass.on_labels(prob, labels)
    return multiclass.row_values(metric, index, matrix, multiclass.predicted(matrix, known))


def metric_of(task: str, metric: str, y: np.ndarray, predictions: list[Any]) -> float:
    """The gate's metric of one variant's labelled rows (NaN for none)."""
    return get_metric(metric).value(MeanSums.of(row_values(task, metric, y, predictions)))


def summarize(metric: str, champion: np.ndarray, candidate: np.ndarray,
              pairs: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """What the rule reads of the labelled rows, from per-row values (``row_values``): ``variants`` (``labelled``,
    ``value``, ``sums``: None where a value is not finite) and, given ``(candidate, champion)`` values of the same
    rows, ``paired`` (``n``, ``sums``; None where one is not finite)."""
    variants = {}
    for name, values in (("champion", champion), ("candidate", candidate)):
        value = get_metric(metric).value(MeanSums.of(values))
        sums = Sums.of(values) if math.isfinite(value) else None
        variants[name] = {"labelled": len(values), "value": value if math.isfinite(value) else None,
                          "sums": None if sums is None else [sums.n, sums.total, sums.squares]}
    out: dict[str, Any] = {"metric": metric, "variants": variants}
    if pairs is not None:
        c, h = pairs
        both = PairSums.of(c, h)
        out["paired"] = {"n": both.n, "sums": [both.c, both.h, both.cc, both.hh, both.ch]} \
            if np.isfinite(c).all() and np.isfinite(h).all() else None
    return out


def _pairs(task: str, metric: str, champion: pd.DataFrame, candidate: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The per-row values ``(candidate, champion)`` of the rows both variants scored for one request (the same
    trace id and key)."""
    on = ["trace_id", KEY]
    both = champion.drop_duplicates(on).merge(candidate.drop_duplicates(on), on=[*on, Y], suffixes=("_h", "_c"))
    y = both[Y].to_numpy()
    return (row_values(task, metric, y, both["prediction_c"].tolist()),
            row_values(task, metric, y, both["prediction_h"].tolist()))


def add_labels(folder: Path, file: Path, spec: LabelSpec, mode: str, who: str = "") -> dict[str, Any]:
    """Join ``file``'s labels (and those received before) to the test's predictions in ``folder``; writes
    ``labels.parquet`` and ``labelled.json`` (with ``who``: the principal that handed the file in) and returns what
    it wrote, with ``new``, ``matched`` and ``without_target`` (this file's rows). ``LabelsError`` (nothing
    written) for a file that cannot be used."""
    predictions = read_predictions(folder, spec)
    new, without = read_labels(file, spec)
    matched = int(new[KEY].isin(set(predictions[KEY])).sum())
    if not matched:
        raise LabelsError(f"labels file {file.name!r}: none of its {len(new)} labelled rows matches a row the "
                          f"endpoint recorded for this test (key {', '.join(spec.key)})")
    stored = pd.read_parquet(folder / LABELS) if (folder / LABELS).is_file() else new.iloc[:0]
    stored = pd.concat([stored, new], ignore_index=True).drop_duplicates(KEY, keep="last")
    joined = predictions.merge(stored, on=KEY, how="inner")
    rows = {name: joined[joined["variant"] == recorded] for name, recorded in (("champion", "champion"),
                                                                                  ("candidate", mode))}
    values = {name: row_values(spec.task, spec.metric, part[Y].to_numpy(), part["prediction"].tolist())
              for name, part in rows.items()}
    pairs = _pairs(spec.task, spec.metric, rows["champion"], rows["candidate"]) if mode == "shadow" else None
    out = {**summarize(spec.metric, values["champion"], values["candidate"], pairs), "labels": len(stored),
           "file": str(file), "at": datetime.now(UTC).isoformat(timespec="seconds"), "who": who}
    _replace(folder / LABELS, lambda tmp: stored.to_parquet(tmp, index=False))
    _replace(folder / LABELLED, lambda tmp: tmp.write_text(json.dumps(out, indent=1)))
    return {**out, "new": len(new), "matched": matched, "without_target": without}


def read_labelled(folder: Path) -> dict[str, Any] | None:
    """What ``add_labels`` wrote last for the test (None: no labels yet)."""
    path = folder / LABELLED
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _replace(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)
