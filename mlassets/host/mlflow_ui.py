"""MLflow's own server whose UI opens on the training runs: ``python -m mlassets.host.mlflow_ui ARGS`` is
``mlflow server ARGS`` (every option, the same checks and stores), with one difference in the page it serves.

MLflow 3.17 keeps what its UI opens on in the browser, not on the server: the workflow (``mlflow.workflowType``,
GenAI until the reader picks "Model training"), the telemetry notice (``mlflow.telemetry.info.alert.dismissed``)
and the assistant panel that opens by itself on a local server (``mlflow.assistant.fab.autoOpenedOnFirstLoad``),
each a ``localStorage`` entry ``<key>_v1`` of MLflow's own settings code. The page served here sets those three,
where the browser holds none yet (a reader's later choice stands), before MLflow's code reads them; and a bare
address (no ``#/…`` route) opens ``$MLASSETS_MLFLOW_LANDING`` (``mlassets ui`` sets the experiment's training
runs; default: the experiments list). The server runs with ``MLFLOW_DISABLE_TELEMETRY=true`` unless told
otherwise, so the notice it hides has nothing to announce, and with ``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false``
unless told otherwise: MLflow's job runner (its huey consumers, for GenAI judges and prompt optimization, which
mlassets does not use) is not started.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

LANDING_ENV = "MLASSETS_MLFLOW_LANDING"
JOBS_ENV = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"  # mlflow.environment_variables: its job runner
DEFAULT_LANDING = "#/experiments"
UI_SETTINGS = {  # MLflow's own localStorage settings (key, version 1) and what mlassets sets them to
    "mlflow.workflowType_v1": "machine_learning",
    "mlflow.telemetry.info.alert.dismissed_v1": True,
    "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": True,
}
APP = "mlassets.host.mlflow_ui:create_app"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


def seed_script(landing: str = "") -> bytes:
    """The ``<script>`` put first in the page's ``<head>``: MLflow's settings where unset, then the landing route."""
    landing = landing or os.environ.get(LANDING_ENV, "") or DEFAULT_LANDING
    settings = json.dumps({k: json.dumps(v) for k, v in UI_SETTINGS.items()})
    return (f"<script>(function(){{try{{var s={settings};for(var k in s){{if(localStorage.getItem(k)===null)"
            f"{{localStorage.setItem(k,s[k]);}}}}}}catch(e){{}}"
            f"if(!location.hash||location.hash==='#'||location.hash==='#/'){{location.replace({json.dumps(landing)});}}"
            "})();</script>").encode()


def inject(page: bytes, landing: str = "") -> bytes:
    """``page`` with ``seed_script`` right after ``<head>`` (unchanged when it has none)."""
    at = page.find(b"<head>")
    return page if at < 0 else page[: at + 6] + seed_script(landing) + page[at + 6:]


class SeedUiSettings:
    """ASGI middleware: HTML answers to GET requests get ``seed_script``; everything else passes untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        start: Message = {}
        body: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                headers = dict(message.get("headers") or [])
                if not headers.get(b"content-type", b"").startswith(b"text/html") or b"content-encoding" in headers:
                    start = {}
                    await send(message)
                return
            if not start:
                await send(message)
                return
            body.append(message.get("body", b""))
            if not message.get("more_body"):
                page = inject(b"".join(body))
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length", b"etag")]
                await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
                await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, capture)


def create_app() -> SeedUiSettings:
    """MLflow's own ASGI application (``mlflow.server.fastapi_app``) behind ``SeedUiSettings``."""
    from mlflow.server.fastapi_app import app

    return SeedUiSettings(app)


def main(argv: list[str] | None = None) -> None:
    """``mlflow server`` with its uvicorn serving ``create_app`` instead of MLflow's bare application."""
    import mlflow.server
    from mlflow.cli import cli

    build = mlflow.server._build_uvicorn_command  # the one place MLflow names the app uvicorn serves

    def build_ours(uvicorn_opts, host, port, workers, app_name, env_file=None, is_factory=False):  # noqa: ANN001
        if app_name != "mlflow.server.fastapi_app:app":
            raise SystemExit(f"mlassets.host.mlflow_ui: MLflow would serve {app_name!r}; run `mlflow server` for it")
        return build(uvicorn_opts, host, port, workers, APP, env_file, is_factory=True)

    mlflow.server._build_uvicorn_command = build_ours
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault(JOBS_ENV, "false")  # no job consumer processes: nothing here submits MLflow jobs
    cli.main(args=["server", *(sys.argv[1:] if argv is None else argv)], prog_name="mlflow")


if __name__ == "__main__":
    main()
