"""Reads of a registered model (its tags and aliases) without importing MLflow, for commands that only look.

``import mlflow`` costs more than a second; ``mlassets history`` reads two things from the registry (the
``champion`` alias and the anchor tag), so it reads them the way MLflow's own clients do, without the client:
the REST API of an MLflow server (``GET /api/2.0/mlflow/registered-models/get``), or the tables of a database
store (``registered_model_tags``, ``registered_model_aliases``), read-only. Any other store (a file store, a
hosted registry) is read through MLflow itself. Every write goes through MLflow.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from mlassets.core import paths

REST_GET = "/api/2.0/mlflow/registered-models/get"
REST_SEARCH_VERSIONS = "/api/2.0/mlflow/model-versions/search"


class PeekError(RuntimeError):
    """The registry could not be read (unreachable server, unreadable database)."""


@dataclass(frozen=True)
class ModelView:
    """A registered model as the registry holds it now."""

    name: str
    tags: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> version


def registry_uri() -> str:
    """Where the registry lives: ``$MLFLOW_REGISTRY_URI``, else the tracking URI (as MLflow resolves it)."""
    return os.environ.get("MLFLOW_REGISTRY_URI") or paths.mlflow_tracking_uri()


def read_model(name: str, uri: str | None = None) -> ModelView | None:
    """The registered model ``name``, or None when it does not exist."""
    uri = uri or registry_uri()
    scheme = urllib.parse.urlsplit(uri).scheme
    if scheme in ("http", "https"):
        return _rest(uri, name)
    if scheme and scheme not in ("file", "databricks", "databricks-uc", "uc"):
        return _database(uri, name)
    return _mlflow(uri, name)


def version_tags(name: str, key: str, uri: str | None = None) -> dict[str, str]:
    """Each version's value of the tag ``key`` (``{version: value}``; versions without it are left out), read the
    way ``read_model`` reads (``history`` shows each version's ``family`` with it)."""
    uri = uri or registry_uri()
    scheme = urllib.parse.urlsplit(uri).scheme
    if scheme in ("http", "https"):
        return _rest_version_tags(uri, name, key)
    if scheme and scheme not in ("file", "databricks", "databricks-uc", "uc"):
        return _database_version_tags(uri, name, key)
    import mlflow

    client = mlflow.MlflowClient(registry_uri=uri)
    return {str(v.version): v.tags[key] for v in client.search_model_versions(f"name = '{name}'") if key in v.tags}


def _get(uri: str, path: str, query: dict[str, str]) -> dict | None:
    """GET a REST endpoint of MLflow as JSON; None when the resource does not exist."""
    url = f"{uri.rstrip('/')}{path}?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(url, headers=_auth_headers())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            doc = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        if exc.code == 404 or "RESOURCE_DOES_NOT_EXIST" in body:
            return None
        raise PeekError(f"MLflow at {uri}: {exc.code} {body[:200]}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise PeekError(f"MLflow at {uri} is not reachable: {exc}") from None
    return doc


def _rest(uri: str, name: str) -> ModelView | None:
    doc = _get(uri, REST_GET, {"name": name})
    if doc is None:
        return None
    model = doc.get("registered_model") or {}
    return ModelView(name=model.get("name", name),
                     tags={t["key"]: t.get("value", "") for t in model.get("tags", [])},
                     aliases={a["alias"]: str(a["version"]) for a in model.get("aliases", [])})


def _rest_version_tags(uri: str, name: str, key: str) -> dict[str, str]:
    out: dict[str, str] = {}
    token = ""
    while True:
        query = {"filter": f"name = '{name}'", "max_results": "1000", **({"page_token": token} if token else {})}
        doc = _get(uri, REST_SEARCH_VERSIONS, query) or {}
        for version in doc.get("model_versions", []):
            tags = {t["key"]: t.get("value", "") for t in version.get("tags", [])}
            if key in tags:
                out[str(version["version"])] = tags[key]
        token = doc.get("next_page_token", "")
        if not token:
            return out


def _auth_headers() -> dict[str, str]:
    """The credentials MLflow's own client sends, from the same variables."""
    token = os.environ.get("MLFLOW_TRACKING_TOKEN")
    if token:
        return {"Authorization": f"Bearer {token}"}
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
    return {}


def _database(uri: str, name: str) -> ModelView | None:
    import sqlalchemy as sa

    if uri.startswith("sqlite:///") and not os.path.exists(uri.removeprefix("sqlite:///")):
        return None  # nothing was ever tracked here (and reading must not create the file)
    engine = sa.create_engine(uri, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            found = conn.execute(sa.text("SELECT name FROM registered_models WHERE name = :n"), {"n": name}).first()
            if found is None:
                return None
            tags = conn.execute(sa.text("SELECT key, value FROM registered_model_tags WHERE name = :n"), {"n": name})
            aliases = conn.execute(sa.text("SELECT alias, version FROM registered_model_aliases WHERE name = :n"),
                                   {"n": name})
            return ModelView(name=name, tags={k: v or "" for k, v in tags}, aliases={a: str(v) for a, v in aliases})
    except sa.exc.SQLAlchemyError as exc:
        if "no such table" in str(exc) or "does not exist" in str(exc):
            return None  # a store where no model was ever registered
        raise PeekError(f"the MLflow database {uri.split('@')[-1]} is not readable: {exc.__class__.__name__}") from None
    finally:
        engine.dispose()


def _database_version_tags(uri: str, name: str, key: str) -> dict[str, str]:
    import sqlalchemy as sa

    if uri.startswith("sqlite:///") and not os.path.exists(uri.removeprefix("sqlite:///")):
        return {}
    engine = sa.create_engine(uri, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT version, value FROM model_version_tags WHERE name = :n AND key = :k"),
                                {"n": name, "k": key})
            return {str(version): value or "" for version, value in rows}
    except sa.exc.SQLAlchemyError as exc:
        if "no such table" in str(exc) or "does not exist" in str(exc):
            return {}
        raise PeekError(f"the MLflow database {uri.split('@')[-1]} is not readable: {exc.__class__.__name__}") from None
    finally:
        engine.dispose()


def _mlflow(uri: str, name: str) -> ModelView | None:
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        model = mlflow.MlflowClient(registry_uri=uri).get_registered_model(name)
    except MlflowException:
        return None
    return ModelView(name=model.name, tags=dict(model.tags), aliases={a: str(v) for a, v in model.aliases.items()})
