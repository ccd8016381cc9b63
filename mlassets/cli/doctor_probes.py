"""The probes ``mlassets doctor``'s checks use: an HTTP GET and a database connection, each with a short timeout,
credentials from the URL or the environment (never printed)."""

from __future__ import annotations

import os
import sqlite3
import urllib.request
from base64 import b64encode
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from mlassets.core import settings

TIMEOUT_S = 3.0  # per network call; a whole check gets a few of them


def http_get(url: str, auth: tuple[str, str] | None = None, token: str = "") -> tuple[int, bytes]:
    """GET with a short timeout; userinfo in ``url`` (or ``auth``) becomes basic auth, ``token`` a bearer."""
    parts = urlsplit(url)
    if parts.username:
        auth = (parts.username, parts.password or "")
        url = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    elif token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - configured URLs
            return response.status, response.read(65536)
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def database(url: str, table: str = "") -> str:
    """Connect to a SQLAlchemy URL; return the server version (and whether ``table`` exists yet)."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    if url.startswith("sqlite"):
        path = Path(sa.engine.make_url(url).database or "")
        if not path.exists():
            if not os.access(path.parent if path.parent.exists() else Path.cwd(), os.W_OK):
                raise OSError(f"{path.parent} is not writable")
            return f"sqlite {sqlite3.sqlite_version} (file created on first use)"
    connect_args = {"connect_timeout": int(TIMEOUT_S)} if url.startswith("postgres") else {}
    engine = sa.create_engine(url, poolclass=NullPool, connect_args=connect_args)
    try:
        with engine.connect() as conn:
            name = {"postgresql": "PostgreSQL"}.get(engine.dialect.name, engine.dialect.name)
            found = f"{name} {'.'.join(map(str, engine.dialect.server_version_info or ()))}"
            if table and not sa.inspect(conn).has_table(table):
                found += f" (no '{table}' table yet: created on first use)"
        return found
    finally:
        engine.dispose()


def mlflow_http(base: str, path: str) -> bytes:
    """GET from the MLflow server with the client's own credentials (``MLFLOW_TRACKING_USERNAME``/``_PASSWORD``)."""
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    auth = (user, password or "") if user else None
    status, body = http_get(base.rstrip("/") + path, auth, os.environ.get("MLFLOW_TRACKING_TOKEN", ""))
    if status != 200:
        raise OSError(f"GET {path} answered HTTP {status}")
    return body


def resolve_env(node: object) -> object:
    if isinstance(node, dict):
        names = settings.env_references(node) if set(node) == {"env"} else []
        return os.environ.get(names[0], "") if names else {k: resolve_env(v) for k, v in node.items()}
    return [resolve_env(v) for v in node] if isinstance(node, list) else node
