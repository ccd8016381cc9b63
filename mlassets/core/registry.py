"""The model registry: every candidate is an MLflow model version whose tags are its full record."""

from __future__ import annotations

from collections.abc import Mapping

import mlflow
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException

from mlassets.core.artifact import ModelBundle, load_bundle
from mlassets.core.tracking import bundle_path

CHAMPION = "champion"
CHALLENGER = "challenger"


class RegistryError(LookupError):
    """An unknown model or version, or a version that may not be served or promoted."""


def _client() -> mlflow.MlflowClient:
    return mlflow.MlflowClient()


def register(name: str, model_uri: str, tags: Mapping[str, str]) -> ModelVersion:
    """A new version of ``name`` for the logged model, carrying ``tags`` (all strings)."""
    client = _client()
    try:
        client.get_registered_model(name)
    except MlflowException:
        client.create_registered_model(name, description="Registered by mlassets; tags hold each record.")
    return client.create_model_version(name, model_uri, tags={k: str(v) for k, v in tags.items()})


def get_version(name: str, version: str | int) -> ModelVersion:
    try:
        return _client().get_model_version(name, str(version))
    except MlflowException:
        raise RegistryError(f"model {name!r} has no version {version!r}") from None


def alias_version(name: str, alias: str = CHAMPION) -> ModelVersion | None:
    """The version an alias points at, or None when the model or alias does not exist."""
    try:
        return _client().get_model_version_by_alias(name, alias)
    except MlflowException:
        return None


def set_alias(name: str, alias: str, version: str | int) -> None:
    _client().set_registered_model_alias(name, alias, str(version))


def gate_passed(version: ModelVersion) -> bool:
    return version.tags.get("gate_passed") == "true"


def load_version_bundle(version: ModelVersion) -> ModelBundle:
    return load_bundle(bundle_path(version.source))
