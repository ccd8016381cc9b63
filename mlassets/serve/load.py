"""Serving handoff: the champion is loaded only when its record holds a passing gate result, or when the
promotion log holds a forced promotion of it with a reason. The log's hash chain and its anchor in MLflow are
checked before any row is trusted (a damaged log is refused with the sentence ``mlassets history`` prints), and
the model folder is checked against the registered version (its run, logged model and weights).

    from mlassets.serve import load_champion
    model = load_champion("flights_arr_delay")   # ServingError, naming the model and version, otherwise
    model.predict(raw_rows)
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from opentelemetry import trace

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import derived_repo
from mlassets.core.data.store import VersionedStore
from mlassets.core.diagnose import spans
from mlassets.core.evaluate.predictions import write_scored
from mlassets.core.features.store import BRANCH
from mlassets.core.records import Record
from mlassets.core.registry import promote
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promotion import PromotionError, PromotionLog
from mlassets.core.tracking import connect
from mlassets.core.train.artifact import ModelBundle
from mlassets.core.train.outputs import served

if TYPE_CHECKING:
    import pyarrow as pa

_TRACER = trace.get_tracer("mlassets.serving")


class ServingError(registry.RegistryError):
    """No champion, an unknown model or version, or a version that may not be served."""


class NoChampion(ServingError):
    """The model has no ``champion`` alias yet (nothing was promoted)."""


@dataclass(frozen=True)
class ServedModel:
    name: str
    version: str
    basis: str  # "gate passed" or "forced promotion: <reason>"
    bundle: ModelBundle
    record: dict[str, str] = field(default_factory=dict)  # the version's registry tags

    def predict(self, rows: pd.DataFrame) -> np.ndarray | pd.DataFrame:
        """Predictions for raw feature rows: target units or P(1); a multiclass model's ``prediction`` (label) and
        ``probability_<class>`` columns (as the MLflow pyfunc model answers)."""
        return served(self.bundle, rows)


@dataclass(frozen=True, kw_only=True)
class PredictionSet(Record):
    """The champion's predictions of a version's newest rows, committed to the derived repository."""

    commit: str
    uri: str
    rows: int
    mae: float | None  # when the rows carry the target (regression, binary)
    accuracy: float | None = None  # multiclass, when the rows carry the target


def load_version(name: str, version: str | int, tracking_uri: str | None = None,
                 log: PromotionLog | None = None) -> ServedModel:
    """A registered version, refused unless its record holds a passing gate or a forced promotion."""
    connect(tracking_uri)
    try:
        registry.check_model(name)
        record = registry.get_version(name, version)
        basis = promote.serving_basis(record, log)
        bundle = registry.load_version_bundle(record)  # its folder and weights are checked against the record
    except (registry.RegistryError, PromotionError) as exc:
        raise ServingError(str(exc)) from None
    return ServedModel(name, str(record.version), basis, bundle, dict(record.tags))


def load_champion(name: str, tracking_uri: str | None = None, log: PromotionLog | None = None) -> ServedModel:
    """The champion of ``name`` by the promotion log (not the alias, its projection), if it may be served."""
    connect(tracking_uri)
    try:
        registry.check_model(name)
    except registry.RegistryError as exc:
        raise ServingError(str(exc)) from None
    try:  # the log's chain and its anchor in MLflow first: a rewritten row is never served
        live = promote.trusted_live_version(name, log)
    except PromotionError as exc:
        raise ServingError(str(exc)) from None
    if live is None:
        alias = registry.alias_version(name, registry.CHAMPION)
        outside = f" (its champion alias points at v{alias.version}, set outside the promotion log)" if alias else ""
        raise NoChampion(f"model {name!r} has no champion in the promotion log{outside}; promote a version first "
                         "(mlassets promote VERSION)")
    return load_version(name, live, tracking_uri, log)


def write_predictions(store: VersionedStore, cfg: PipelineConfig, data_version: str, model: ServedModel,
                      rows: pd.DataFrame | Iterable[pa.Table] | Callable[[], pd.DataFrame | Iterable[pa.Table]],
                      metadata: Mapping[str, str] | None = None) -> PredictionSet:
    """Score ``rows`` (a frame, or chunks: ``features.store.split_tables``' tables; or what ``rows()`` gives) and
    commit key columns + prediction to the dataset's derived repository. Chunks are scored one at a time into a
    local file (``evaluate.predictions.write_scored``), which the commit then streams: nothing holds them all.

    Traced (OpenTelemetry): a ``batch_inference`` span with ``read`` (when given a reader: one per chunk read),
    ``preprocessing``, ``model`` and ``write`` under it, recorded in ``$MLASSETS_HOME/traces/serving.jsonl`` for the
    dashboard's serving-latency page.
    """
    spans.enable(paths.home() / "traces" / "serving.jsonl")
    with _TRACER.start_as_current_span("batch_inference", attributes={"model": model.name,
                                                                      "version": model.version}) as span:
        reader = callable(rows)
        if reader:
            with _TRACER.start_as_current_span("read"):
                rows = rows()
        chunks = [rows] if isinstance(rows, pd.DataFrame) else rows
        result = _write_predictions(store, cfg, data_version, model, chunks, reader and chunks is rows, metadata)
        span.set_attribute("rows", result.rows)
        return result


def _write_predictions(store: VersionedStore, cfg: PipelineConfig, data_version: str, model: ServedModel,
                       chunks: Iterable[pa.Table | pd.DataFrame], traced_read: bool,
                       metadata: Mapping[str, str] | None) -> PredictionSet:
    path = f"predictions/{data_version}/{model.name}-v{model.version}.parquet"
    repo = derived_repo(cfg)
    meta = {"data_version": data_version, "model_name": model.name, "model_version": model.version,
            "serving_basis": model.basis, **(metadata or {})}
    with tempfile.TemporaryDirectory(prefix="mlassets-predictions-") as tmp:
        file = Path(tmp) / "predictions.parquet"
        scored = write_scored(chunks, cfg, model.predict, model.version, file, traced_read=traced_read)
        store.create_repo(repo, default_branch=BRANCH)
        with _TRACER.start_as_current_span("write", attributes={"rows": scored.rows}):
            with store.transaction(repo, BRANCH, f"Predictions of {data_version[:12]} by {model.name} "
                                   f"v{model.version}", meta, allow_empty=True) as tx:  # a new commit, as ever
                tx.put_file(path, file)
    assert tx.commit is not None  # the transaction landed (or raised)
    return PredictionSet(commit=tx.commit.id, uri=store.uri(repo, tx.commit.id, path), rows=scored.rows,
                         mae=scored.mae, accuracy=scored.accuracy)
