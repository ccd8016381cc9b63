"""Old links still open: while ``mlassets ui`` runs, it answers on the addresses links were made under before (the
UI setting's earlier addresses and the defaults, ``mlassets.core.ui_urls``), where they are on this machine and
their port is free, with a redirect to the same path on the address each UI has now. A browser keeps a link's
``#…`` part through a redirect, so MLflow's ``/#/models/…`` links arrive where they pointed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from mlassets.core.ui_urls import UiUrls

LOOPBACK = ("127.0.0.1", "localhost")


@dataclass
class Redirect:
    kind: str  # dagster, mlflow, dashboard
    old: str
    new: str
    server: ThreadingHTTPServer

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(old: str, new: str) -> type[BaseHTTPRequestHandler]:
    prefix = urlsplit(old).path.rstrip("/")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path[len(prefix):] if prefix and self.path.startswith(prefix) else self.path
            self.send_response(307)  # temporary: the old address may serve a UI again one day
            self.send_header("Location", new + (path if path.startswith("/") else f"/{path}"))
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_HEAD = do_GET

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
            return

    return Handler


def start_redirects(urls: UiUrls) -> tuple[list[Redirect], list[str]]:
    """A redirect server on every earlier loopback address whose port is free (``(started, skipped notes)``)."""
    started: list[Redirect] = []
    notes: list[str] = []
    taken = {urlsplit(urls.of(k)).port for k in ("dagster", "mlflow", "dashboard")}  # the UIs' own ports
    for kind, olds in urls.moved().items():
        for old in olds:
            parts = urlsplit(old)
            if parts.hostname not in LOOPBACK or not parts.port or parts.port in taken:
                continue
            try:
                server = ThreadingHTTPServer(("127.0.0.1", parts.port), _handler(old, urls.of(kind)))
            except OSError:
                notes.append(f"links to {old} cannot be redirected: its port is in use")
                continue
            taken.add(parts.port)
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, name=f"redirect-{parts.port}", daemon=True).start()
            started.append(Redirect(kind, old, urls.of(kind), server))
    return started, notes
