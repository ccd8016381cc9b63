"""The connection half of ``LakeFSStore``: settings, one SDK client per process, error translation, pages.

Secrets never leave ``Settings``: not in ``repr``, not in errors, not in logs (the SDK does not log
request headers; errors carry the server's message only).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import lakefs
import lakefs_sdk
import urllib3

from mlassets.core.data.store.base import Commit, Conflict, NotFound, StoreError, validate_ref, validate_repo

ENDPOINT_ENV = "LAKECTL_SERVER_ENDPOINT_URL"
ACCESS_KEY_ENV = "LAKECTL_CREDENTIALS_ACCESS_KEY_ID"
SECRET_KEY_ENV = "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY"
NAMESPACE_ENV = "MLASSETS_LAKEFS_NAMESPACE"


@dataclass(frozen=True)
class Settings:
    """Where lakeFS is and how to log in: arguments first, then the SDK's own ``LAKECTL_*`` variables."""

    endpoint: str
    access_key_id: str
    secret_access_key: str = field(repr=False)
    namespace: str = ""  # storage namespace of new repos: a prefix, or a template with "{repo}"

    @classmethod
    def resolve(
        cls, endpoint: str | None = None, access_key_id: str | None = None, secret_access_key: str | None = None,
        namespace: str | None = None,
    ) -> Settings:
        endpoint = endpoint or os.environ.get(ENDPOINT_ENV, "")
        key = access_key_id or os.environ.get(ACCESS_KEY_ENV, "")
        secret = secret_access_key or os.environ.get(SECRET_KEY_ENV, "")
        missing = [name for name, value in ((ENDPOINT_ENV, endpoint), (ACCESS_KEY_ENV, key), (SECRET_KEY_ENV, secret))
                   if not value]
        if missing:
            raise ValueError("the lakeFS store needs an endpoint and credentials: pass them or set "
                             + ", ".join(missing))
        return cls(endpoint.rstrip("/"), key, secret, namespace or os.environ.get(NAMESPACE_ENV, ""))

    def __repr__(self) -> str:  # the secret never appears, the key id only by its first characters
        return f"Settings(endpoint={self.endpoint!r}, access_key_id={self.access_key_id[:4] + '…'!r})"

    def client(self) -> lakefs.Client:
        return lakefs.Client(host=self.endpoint, username=self.access_key_id, password=self.secret_access_key)


def to_commit(c: lakefs_sdk.Commit) -> Commit:
    return Commit(c.id, tuple(c.parents), c.message, dict(c.metadata or {}), float(c.creation_date))


def status_of(exc: BaseException) -> int | None:
    if isinstance(exc, lakefs.exceptions.ServerException):
        return exc.status_code
    if isinstance(exc, lakefs_sdk.exceptions.ApiException):
        return exc.status
    return None


def server_message(exc: BaseException) -> str:
    """The ``message`` of a lakeFS error body (never request headers, so never credentials)."""
    body: Any = getattr(exc, "body", None)
    if isinstance(body, bytes | str):
        with contextlib.suppress(ValueError):
            body = json.loads(body)
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(getattr(exc, "reason", "") or type(exc).__name__)


API_ERRORS = (lakefs.exceptions.LakeFSException, lakefs_sdk.exceptions.ApiException)


@contextlib.contextmanager
def translate(
    not_found: Callable[[], StoreError] | None = None,
    conflict: Callable[[str], StoreError] | None = None,
) -> Iterator[None]:
    """Turn SDK errors into store errors: 404 -> ``not_found()``, 409 -> ``conflict(message)``."""
    try:
        yield
    except API_ERRORS as exc:
        status, message = status_of(exc), server_message(exc)
        if status == 404 and not_found is not None:
            raise not_found() from exc
        if status == 409 and conflict is not None:
            raise conflict(message) from exc
        if status == 409:
            raise Conflict(f"lakeFS: {message}") from exc
        if status == 404:
            raise NotFound(f"lakeFS: {message}") from exc
        raise StoreError(f"lakeFS request failed (HTTP {status}): {message}") from exc
    except urllib3.exceptions.HTTPError as exc:
        raise StoreError(f"lakeFS is unreachable: {type(exc).__name__}") from exc


def pages(list_fn: Callable[..., Any], *args: Any, amount: int = 1000, **kwargs: Any) -> Iterator[Any]:
    """Every result of a paginated lakeFS listing call, ``amount`` (at most 1000) per request."""
    after: str | None = None
    while True:
        page = list_fn(*args, after=after, amount=max(1, min(amount, 1000)), **kwargs)
        yield from page.results
        if not page.pagination.has_more:
            return
        after = page.pagination.next_offset


class Connection:
    """The part of ``LakeFSStore`` that talks to the server: settings, one client per process, lookups."""

    def __init__(self, endpoint: str | None = None, access_key_id: str | None = None,
                 secret_access_key: str | None = None, namespace: str | None = None) -> None:
        self.settings = Settings.resolve(endpoint, access_key_id, secret_access_key, namespace)
        self._client: lakefs.Client | None = None
        self._pid = 0
        self._default_namespace = ""  # the server's, asked once

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings.endpoint!r})"

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_client": None, "_pid": 0}

    @property
    def client(self) -> lakefs.Client:
        """This process's ``lakefs.Client`` (a new one after fork: sockets are never shared)."""
        if self._client is None or self._pid != os.getpid():
            self._client, self._pid = self.settings.client(), os.getpid()
        return self._client

    @property
    def api(self) -> lakefs_sdk.client.LakeFSClient:
        return self.client.sdk_client

    def _missing(self, repo: str, what: str) -> NotFound:
        """NotFound(what), or NotFound naming the repository when that is what is missing."""
        try:
            self.api.repositories_api.get_repository(repo)
        except lakefs_sdk.exceptions.ApiException as exc:
            if exc.status == 404:
                return NotFound(f"repository {repo!r} does not exist")
        return NotFound(what)

    def _no_ref(self, repo: str, ref: str) -> NotFound:
        return self._missing(repo, f"ref {ref!r} does not exist in repository {repo!r}")

    def _branch_head(self, repo: str, branch: str) -> str:
        validate_ref(branch)
        with translate(lambda: self._missing(repo, f"branch {branch!r} does not exist in repository {repo!r}")):
            return self.api.branches_api.get_branch(validate_repo(repo), branch).commit_id

    def _namespace(self, repo: str) -> str:
        template = self.settings.namespace or self._default_namespace
        if not template:
            with translate():
                storage = self.api.config_api.get_config().storage_config
            template = self._default_namespace = (storage.default_namespace_prefix if storage else None) or "local://"
        if "{repo}" in template:
            return template.format(repo=repo)
        return f"{template}{repo}" if template.endswith("://") else f"{template.rstrip('/')}/{repo}"
