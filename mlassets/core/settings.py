"""The one switch between the embedded stack and production services: ``MLASSETS_PROFILE``.

``embedded`` (the default) keeps everything under ``$MLASSETS_HOME``: a sqlite Dagster instance, sqlite MLflow
with local artifacts, the local versioned store and a sqlite promotion log; nothing needs configuring.
``production`` reads every service from the environment and never falls back to a local file:

=================  ==================================================================================
service            variables
=================  ==================================================================================
Dagster instance   ``DAGSTER_HOME`` holding a ``dagster.yaml`` with PostgreSQL storage (``infra/dagster.yaml``)
                   and every variable that file names (``{env: DAGSTER_PG_PASSWORD}``, ...)
MLflow             ``MLFLOW_TRACKING_URI`` (a server, or a database URL plus ``MLASSETS_ARTIFACT_ROOT``)
versioned store    ``MLASSETS_STORE`` (default ``lakefs``) and the lakeFS SDK's ``LAKECTL_*`` variables
promotion log      ``MLASSETS_PROMOTION_DB`` (any SQLAlchemy URL)
=================  ==================================================================================

A missing variable is an error that names every missing one at once and never a value. This module reads
the environment only (no dagster, no mlflow), so ``mlassets.core`` may ask it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

PROFILE_ENV = "MLASSETS_PROFILE"
EMBEDDED, PRODUCTION = "embedded", "production"
PROFILES = (EMBEDDED, PRODUCTION)

DAGSTER_HOME_ENV = "DAGSTER_HOME"
TRACKING_ENV = "MLFLOW_TRACKING_URI"
ARTIFACT_ENV = "MLASSETS_ARTIFACT_ROOT"  # production, database tracking URI: where new experiments keep artifacts
STORE_ENV = "MLASSETS_STORE"
PROMOTION_ENV = "MLASSETS_PROMOTION_DB"
DASHBOARD_ENV = "MLASSETS_DASHBOARD_URL"  # optional: a running dashboard for `mlassets doctor` to check
LAKEFS_ENV = ("LAKECTL_SERVER_ENDPOINT_URL", "LAKECTL_CREDENTIALS_ACCESS_KEY_ID",
              "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY")
SECRET_MARKERS = ("PASSWORD", "SECRET", "TOKEN", "PRIVATE", "CREDENTIAL")  # in a variable's name: its value is secret
MASK = "***"


class SettingsError(ValueError):
    """The production profile cannot start: what is missing or wrong, by name (never a value)."""


def profile() -> str:
    """``$MLASSETS_PROFILE``: ``embedded`` when unset."""
    value = (os.environ.get(PROFILE_ENV) or EMBEDDED).strip().lower()
    if value not in PROFILES:
        raise SettingsError(f"{PROFILE_ENV}={value!r} is not a profile (choose: {', '.join(PROFILES)})")
    return value


def production() -> bool:
    return profile() == PRODUCTION


def service_env(name: str) -> str | None:
    """A service's variable: its value, or None in the embedded profile (the caller's embedded default applies).

    In production an unset variable is a ``SettingsError`` naming every missing variable, not only this one.
    """
    value = os.environ.get(name)
    if value or not production():
        return value or None
    raise SettingsError(_message(sorted(set(missing()) | {name})))


def store_backend() -> str:
    """``$MLASSETS_STORE``, else ``lakefs`` in production and ``local`` embedded."""
    return os.environ.get(STORE_ENV) or ("lakefs" if production() else "local")


def artifact_root() -> str:
    """Production: ``$MLASSETS_ARTIFACT_ROOT``, or "" (an MLflow server's own artifact store). Embedded: ""."""
    return os.environ.get(ARTIFACT_ENV, "") if production() else ""


def dagster_yaml() -> Path | None:
    home = os.environ.get(DAGSTER_HOME_ENV)
    return Path(home) / "dagster.yaml" if home else None


def env_references(node: Any) -> list[str]:
    """Every ``{env: NAME}`` in a Dagster config tree: the variables that file needs."""
    if isinstance(node, Mapping):
        if set(node) == {"env"} and isinstance(node["env"], str):
            return [node["env"]]
        return [name for value in node.values() for name in env_references(value)]
    if isinstance(node, list):
        return [name for value in node for name in env_references(value)]
    return []


def _instance_problems() -> tuple[list[str], list[str]]:
    """(missing variables, other problems) of the production Dagster instance."""
    path = dagster_yaml()
    if path is None:
        return [DAGSTER_HOME_ENV], []
    if not path.is_file():
        return [], [f"{DAGSTER_HOME_ENV}/dagster.yaml does not exist ({path}); copy infra/dagster.yaml there"]
    config = yaml.safe_load(path.read_text()) or {}
    storage = config.get("storage") or {}
    problems = []
    if not ("postgres" in storage or "mysql" in storage or "run_storage" in config):
        problems.append(f"{path} keeps Dagster's storage in sqlite; production needs PostgreSQL "
                        "(see infra/dagster.yaml)")
    return [name for name in env_references(config) if not os.environ.get(name)], problems


def missing() -> list[str]:
    """The variables the production profile needs and the environment lacks (empty when embedded)."""
    if not production():
        return []
    names, _ = _instance_problems()
    names += [n for n in (TRACKING_ENV, PROMOTION_ENV) if not os.environ.get(n)]
    tracking = os.environ.get(TRACKING_ENV, "")
    if tracking and not tracking.startswith(("http://", "https://")) and not os.environ.get(ARTIFACT_ENV):
        names.append(ARTIFACT_ENV)  # a database URL has no server to keep artifacts: name where they go
    if store_backend() == "lakefs":
        names += [n for n in LAKEFS_ENV if not os.environ.get(n)]
    return list(dict.fromkeys(names))


def problems() -> list[str]:
    """Everything that stops the production profile from starting, one sentence each (no values)."""
    if not production():
        return []
    out = [_message(missing())] if missing() else []
    out += _instance_problems()[1]
    if store_backend() not in ("local", "lakefs"):
        out.append(f"{STORE_ENV}={store_backend()!r} is not a store backend (choose: local, lakefs)")
    return out


def check() -> str:
    """Fail fast (``SettingsError``) when the selected profile cannot start; return the profile."""
    name = profile()
    if found := problems():
        raise SettingsError("; ".join(found))
    return name


def _message(names: Iterable[str]) -> str:
    return (f"{PROFILE_ENV}=production needs these variables set: {', '.join(names)} "
            "(see docs/how-to/production.md)")


# ------------------------------------------------------------------ secrets: what must never be shown


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in SECRET_MARKERS) and not upper.endswith("_ID")


def url_password(value: str) -> str:
    """The password inside a URL's userinfo (``scheme://user:password@host``), else ""."""
    if "://" not in value or "@" not in value:
        return ""
    try:
        return urlsplit(value).password or ""
    except ValueError:
        return ""


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values that must never be printed or recorded: secret-named variables and passwords inside URLs."""
    environ = os.environ if environ is None else environ
    found = {v for k, v in environ.items() if is_secret_name(k)} | {url_password(v) for v in environ.values()}
    return sorted((v for v in found if len(v) >= 4), key=len, reverse=True)


def mask_url(url: str) -> str:
    """``url`` with the password of its userinfo replaced by ``***`` (the rest kept for reading)."""
    if not url_password(url):
        return url
    parts = urlsplit(url)
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret value (default: ``secret_values()``) and URL password replaced by ``***``."""
    for secret in secrets if secrets is not None else secret_values():
        if secret:
            text = text.replace(secret, MASK)
    return re.sub(r"(://[^/\s:@]+:)[^/\s@]+@", rf"\1{MASK}@", text)
