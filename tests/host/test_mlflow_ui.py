"""``mlassets.host.mlflow_ui``: MLflow's own server and application, its page carrying MLflow's own UI settings."""

from __future__ import annotations

import asyncio
import json

import mlflow.server

from mlassets.host import mlflow_ui

PAGE = b'<!doctype html><html><head><title>MLflow</title><script defer src="main.js"></script></head></html>'


async def _page(body: bytes, content_type: bytes, scope: dict, pieces: int = 2) -> tuple[dict, bytes]:
    async def app(scope, receive, send) -> None:  # noqa: ANN001 - a minimal ASGI app serving ``body``
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]})
        half = len(body) // pieces
        await send({"type": "http.response.body", "body": body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": body[half:]})

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    await mlflow_ui.SeedUiSettings(app)({"type": "http", **scope}, None, send)
    return dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def test_the_page_sets_mlflows_own_settings_where_unset_and_lands_on_the_training_runs(monkeypatch) -> None:
    monkeypatch.setenv(mlflow_ui.LANDING_ENV, "#/experiments/1/runs?workflowType=machine_learning")
    headers, page = asyncio.run(_page(PAGE, b"text/html; charset=utf-8", {"method": "GET", "path": "/"}))
    script = page[len(b"<!doctype html><html><head>"):page.index(b"<title>")].decode()
    assert script.startswith("<script>") and "localStorage.getItem(k)===null" in script  # a reader's choice stands
    settings = json.loads(script[script.index("var s=") + 6:script.index(";for")])
    assert settings == {"mlflow.workflowType_v1": '"machine_learning"', "mlflow.telemetry.info.alert.dismissed_v1":
                        "true", "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": "true"}  # as MLflow stores them
    assert 'location.replace("#/experiments/1/runs?workflowType=machine_learning")' in script
    assert int(headers[b"content-length"]) == len(page) and page.endswith(PAGE[PAGE.index(b"<title>"):])
    for scope, kind in (({"method": "GET", "path": "/ajax-api/x"}, b"application/json"),
                        ({"method": "POST", "path": "/"}, b"text/html")):
        _, body = asyncio.run(_page(PAGE, kind, scope))
        assert body == PAGE  # other answers pass untouched


def test_the_server_is_mlflows_own_command_serving_this_application(monkeypatch) -> None:
    """... without MLflow's job runner (its consumer processes), unless the environment asks for it."""
    monkeypatch.setenv(mlflow_ui.JOBS_ENV, "unset below")  # so that what main() sets is undone after the test
    monkeypatch.delenv(mlflow_ui.JOBS_ENV)
    called = {}
    monkeypatch.setattr("mlflow.cli.cli.main", lambda args, prog_name: called.update(
        args=args, command=mlflow.server._build_uvicorn_command(None, "127.0.0.1", 5917, 1,
                                                                "mlflow.server.fastapi_app:app")))
    original = mlflow.server._build_uvicorn_command
    try:
        mlflow_ui.main(["--port", "5917"])
    finally:
        mlflow.server._build_uvicorn_command = original
    assert called["args"] == ["server", "--port", "5917"]
    assert called["command"][-2:] == ["--factory", "mlassets.host.mlflow_ui:create_app"]
    from mlflow.environment_variables import MLFLOW_SERVER_ENABLE_JOB_EXECUTION

    assert MLFLOW_SERVER_ENABLE_JOB_EXECUTION.get() is False  # what `mlflow server` reads before it starts them
