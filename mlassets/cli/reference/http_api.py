"""The endpoint's HTTP API, read from the OpenAPI document ``mlassets serve`` answers at ``GET /openapi.json``."""

from __future__ import annotations

import json
import types
from typing import Any

from mlassets.cli.reference.markdown import page, table
from mlassets.core.config import load_config, shipped_configs
from mlassets.core.config.serving import ServingConfig
from mlassets.serve.app import create_app
from mlassets.serve.rows import schema_of
from mlassets.serve.swap import Champion

INTRO = """`mlassets serve MODEL` answers these routes on 127.0.0.1 (`--host`, `--port`; default 8080). The row
schemas below are the shipped `flights` model's columns; a running endpoint answers its own model's at
`GET /openapi.json`. Bad input is a 4xx with a sentence naming the column or the limit, never a 500."""


def openapi(config: str = "flights") -> dict[str, Any]:
    """The OpenAPI document of an endpoint serving ``config``'s model (nothing is loaded or served)."""
    cfg = load_config(shipped_configs()[config])
    schema = schema_of(cfg.features.categorical, cfg.features.numeric, cfg)
    model = types.SimpleNamespace(name=cfg.model.registered_name, version="1")  # only its name and version are read
    app = create_app(Champion(model), schema, ServingConfig(), poll=False)  # type: ignore[arg-type]
    return app.openapi()


def _operation(path: str, method: str, op: dict[str, Any]) -> str:
    text = [f"## `{method.upper()} {path}`\n", op.get("summary", "") + "\n"]
    if op.get("description"):
        text.append(" ".join(op["description"].split()) + "\n")
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        text.append("Request body (`application/json`):\n\n```json\n" + json.dumps(body, indent=2) + "\n```\n")
    responses = [(f"`{code}`", r.get("description", "")) for code, r in op.get("responses", {}).items()]
    text.append(table(("status", "meaning"), responses))
    return "\n".join(text)


def render() -> str:
    document = openapi()
    sections = [_operation(path, method, op) for path, ops in document["paths"].items() for method, op in ops.items()]
    return page("HTTP API", INTRO, *sections)
