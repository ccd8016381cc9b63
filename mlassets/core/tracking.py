"""MLflow set-up shared by every stage: the tracking store, the experiment, and a training run's params and curves."""

from __future__ import annotations

import contextlib
import fcntl
import json
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mlassets.core import paths

EXPERIMENT = "mlassets"
CONFIG_ARTIFACT = "config/pipeline.json"  # the full recorded config of a training run (rebuild reads it)
# The experiment's kind: training runs, not GenAI traces. MLflow 3.17's UI no longer opens an experiment by this
# tag but by the reader's last "GenAI | Model training" choice (GenAI at first), so links also ask for the view.
KIND_TAG, KIND = "mlflow.experimentKind", "custom_model_development"
TRAINING_VIEW = "?workflowType=machine_learning"


@contextlib.contextmanager
def _first_use(uri: str) -> Iterator[None]:
    """Processes that open a new sqlite tracking store at once would each create and migrate its tables (and
    fail on each other's columns): an exclusive lock beside the database file serializes that first open, and the
    first one creates the database whole (``_create``)."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri.removeprefix("sqlite:///"))
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not db.exists():
                _create(db)
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _create(db: Path) -> None:
    """A new sqlite store is created and migrated at a temporary path, then moved into place: a process killed
    during MLflow's migration leaves no half-migrated database behind (every later open would fail on the
    migration's leftover tables, e.g. ``_alembic_tmp_metrics``)."""
    import os

    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    tmp = db.with_name(db.name + ".new")
    tmp.unlink(missing_ok=True)  # what a killed creation left
    SqlAlchemyStore(f"sqlite:///{tmp}", paths.mlflow_artifact_root()).engine.dispose()
    os.replace(tmp, db)


def connect(tracking_uri: str | None = None, create: bool = False) -> None:
    """Point MLflow at the tracking store (``tracking_uri``, else the home's); nothing is opened yet. ``create``: a
    new sqlite store is first created whole, under the lock its first open takes (a command that reads the store
    while another process creates it would otherwise migrate it too, and fail)."""
    import mlflow

    uri = tracking_uri or paths.mlflow_tracking_uri()
    mlflow.set_tracking_uri(uri)
    if create:
        with _first_use(uri):
            pass


def configure(tracking_uri: str | None = None, experiment: str = EXPERIMENT) -> str:
    """Point MLflow at the tracking store and make ``experiment`` (artifacts under the home) the active one.

    Never leave runs to MLflow's default experiment: with a sqlite store its artifacts go to ``./mlruns``.
    """
    import mlflow

    uri = tracking_uri or paths.mlflow_tracking_uri()
    mlflow.set_tracking_uri(uri)
    with _first_use(uri):  # the first client creates and migrates the sqlite tables; others wait for it
        existing = mlflow.get_experiment_by_name(experiment)
    if existing is None:
        try:
            mlflow.create_experiment(experiment, artifact_location=paths.mlflow_artifact_root(),
                                     tags={KIND_TAG: KIND})
        except mlflow.exceptions.MlflowException:  # created concurrently
            pass
    elif existing.tags.get(KIND_TAG) != KIND:  # made before the tag was set
        mlflow.MlflowClient().set_experiment_tag(existing.experiment_id, KIND_TAG, KIND)
    return mlflow.set_experiment(experiment).experiment_id


def ui_url() -> str:
    """The MLflow UI's address for links: the UI setting (``mlassets.core.ui_urls``), else an http tracking
    server's own address, else the one ``mlassets ui`` starts by default."""
    import mlflow

    from mlassets.core.ui_urls import ui_urls

    urls = ui_urls()
    uri = mlflow.get_tracking_uri()
    if urls.mlflow_from_tracking and uri.startswith(("http://", "https://")):
        return uri.rstrip("/")
    return urls.mlflow


def experiment_url(experiment_id: str) -> str:
    """The experiment's training runs."""
    return f"{ui_url()}/#/experiments/{experiment_id}/runs{TRAINING_VIEW}"


def run_url(run_id: str, experiment_id: str = "") -> str:
    """A run's page (without ``experiment_id`` MLflow finds the experiment, but drops the training view)."""
    if not experiment_id:
        return f"{ui_url()}/#/runs/{run_id}"
    return f"{ui_url()}/#/experiments/{experiment_id}/runs/{run_id}{TRAINING_VIEW}"


def model_version_url(name: str, version: str | int) -> str:
    """A registered model version's page."""
    return f"{ui_url()}/#/models/{urllib.parse.quote(name, safe='')}/versions/{version}{TRAINING_VIEW}"


def flatten(prefix: str, value: Any) -> dict[str, str]:
    """Nested config -> ``{"training.lr": "0.003", ...}`` for ``log_params``."""
    if isinstance(value, Mapping):
        out: dict[str, str] = {}
        for key, inner in value.items():
            out.update(flatten(f"{prefix}.{key}" if prefix else str(key), inner))
        return out
    text = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return {prefix: text[:6000]}


def log_training(config: Mapping[str, Any], metric_name: str, best: float, train_seconds: float,
                 curves: Sequence[Mapping[str, float]] = ()) -> None:
    """Params (and the whole config as JSON), per-epoch curves and the best validation metric into the active run.

    ``metric_name`` is ``mae`` (regression) or ``logloss`` (binary): logged as ``val_<name>`` and ``best_val_<name>``.
    """
    import mlflow

    mlflow.log_dict(dict(config), CONFIG_ARTIFACT)
    params = flatten("", config)
    for chunk_start in range(0, len(params), 100):
        mlflow.log_params(dict(list(params.items())[chunk_start : chunk_start + 100]))
    name = f"val_{metric_name}"
    for point in curves:
        mlflow.log_metrics({"train_loss": point["train_loss"], name: point["val_metric"]}, step=int(point["epoch"]))
    mlflow.log_metrics({f"best_{name}": float(best), "train_seconds": float(train_seconds)})
