"""Bearer tokens at the endpoint (``mlassets.core.identity.tokens``): an ASGI layer in front of every route.

``/health`` and ``/ready`` answer anyone (probes). Scoring (``POST /invocations``, ``/predict``) and reading
(``GET`` of any other route) need the ``predict`` scope; every other request (anything that would change what is
served) needs ``admin``. 401 with ``WWW-Authenticate: Bearer`` without a genuine token, 403 with the wrong scope, 400
for a token in the query string. A token is read from the ``Authorization`` header only and never written to a
log, a span, a metric or an answer: the answers name the token's name at most.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

from mlassets.core.identity.tokens import TokenStore

OPEN = frozenset({"/health", "/ready"})
SCORING = frozenset({"/invocations", "/predict"})
QUERY_NAMES = ("token", "access_token", "bearer", "authorization", "api_key", "apikey", "key")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def needed_scope(method: str, path: str) -> str | None:
    """The scope a request needs (None: open to anyone)."""
    if path in OPEN and method in ("GET", "HEAD"):
        return None
    if path in SCORING and method == "POST" or method in ("GET", "HEAD"):
        return "predict"
    return "admin"


class BearerAuth:
    """Checks each HTTP request's bearer token against ``store`` before the app sees it."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], store: TokenStore) -> None:
        self.app, self.store = app, store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, message, headers = refusal
        body = json.dumps({"error": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                *headers]})
        await send({"type": "http.response.body", "body": body})

    def refusal(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """(status, sentence, headers) of a refused request; None when it may go on."""
        query = scope.get("query_string", b"").decode("latin-1")
        if any(name.lower() in QUERY_NAMES for name, _ in parse_qsl(query, keep_blank_values=True)):
            return 400, ("a token in the query string is refused (URLs end up in logs); send it in the "
                         "Authorization header as 'Bearer TOKEN'"), []
        need = needed_scope(scope["method"], scope["path"])
        if need is None:
            return None
        challenge = [(b"www-authenticate", b'Bearer realm="mlassets"')]
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        kind, _, token = header.partition(" ")
        if not header:
            return 401, f"{scope['method']} {scope['path']} needs a bearer token with the {need!r} scope", challenge
        if kind.lower() != "bearer":
            return 401, "the Authorization header must read 'Bearer TOKEN'", challenge
        record = self.store.verify(token.strip())
        if record is None:
            return 401, "the bearer token is not valid (unknown, revoked or malformed)", \
                [(b"www-authenticate", b'Bearer realm="mlassets", error="invalid_token"')]
        if need not in record.scopes:
            return 403, (f"token {record.name!r} has the scopes {', '.join(record.scopes)}, and "
                         f"{scope['method']} {scope['path']} needs {need!r}"), \
                [(b"www-authenticate", f'Bearer realm="mlassets", error="insufficient_scope", scope="{need}"'
                  .encode())]
        return None
