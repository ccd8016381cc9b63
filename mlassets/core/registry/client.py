"""The registry's lowest layer: the MLflow client, its error, and a version's record read back from its tags.

Below both ``versions`` (register, load, describe) and ``registrations`` (the registration history), so neither
imports the other's module to reach them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlassets.core.records import RecordError
from mlassets.core.registry.record import RegistryRecord

if TYPE_CHECKING:
    import mlflow
    from mlflow.entities.model_registry import ModelVersion


class RegistryError(LookupError):
    """An unknown model or version, or a version that may not be served or promoted."""


def mlflow_client() -> mlflow.MlflowClient:
    import mlflow

    return mlflow.MlflowClient()


def record_of(version: ModelVersion) -> RegistryRecord:
    """The version's registry record, read back from its tags (``RegistryError`` if incomplete)."""
    try:
        return RegistryRecord.from_tags(version.tags)
    except RecordError as exc:
        raise RegistryError(f"model {version.name!r} version {version.version}: incomplete record ({exc})") from None
