"""The scoring routes in the endpoint's OpenAPI (``GET /openapi.json``).

``/invocations`` and ``/predict`` are plain Starlette routes (no parameter solving per request), which FastAPI
leaves out of its schema; this adds them, with the served model's columns, so a client (and the generated
reference) sees every route the endpoint answers.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from mlassets.serve.rows import Schema

_ERROR = {"type": "object", "required": ["error", "trace_id"],
          "properties": {"error": {"type": "string", "description": "a sentence naming the column, row or limit"},
                         "trace_id": {"type": "string"}}}
_ANSWER = {"type": "object", "required": ["predictions", "model", "version", "trace_id"], "properties": {
    "predictions": {"type": "array", "description": "one number per row (regression: the target's units; binary: "
                    "P(1)), or for a multiclass model one object per row: `prediction` and `probability_<class>`"},
    "model": {"type": "string"}, "version": {"type": "string", "description": "the version that answered"},
    "trace_id": {"type": "string", "description": "also the `x-trace-id` header"}}}
_REFUSALS = {"400": "the body is not JSON", "413": "over serving.max_body_bytes or serving.max_rows",
             "415": "no content type, or not application/json",
             "422": "a row the model cannot take (the column and value are named: a declared rule it breaks), or "
                    "a prediction that is not finite",
             "502": "the downstream call failed", "504": "the downstream call timed out"}


def _row(schema: Schema) -> dict[str, Any]:
    def column(name: str, kind: str) -> dict[str, Any]:
        spec = schema.specs.get(name)
        if spec is not None and kind == "number" and spec.dtype == "int":
            kind = "integer"
        out: dict[str, Any] = {"type": [kind, "null"]} if name in schema.nullable else {"type": kind}
        if spec is not None and kind != "string":  # the declared rules the endpoint checks (``column_rules``)
            out |= {key: value for key, value in (("minimum", spec.min), ("maximum", spec.max)) if value is not None}
        if spec is not None and kind == "string" and spec.allowed is not None:
            out["enum"] = list(spec.allowed)
        return out

    props = {c: column(c, "string") for c in schema.categorical} | {c: column(c, "number") for c in schema.numeric}
    return {"type": "object", "properties": props, "required": [c for c in schema.columns if c not in schema.nullable]}


def _operation(summary: str, description: str, body: dict[str, Any]) -> dict[str, Any]:
    responses = {"200": {"description": "the predictions",
                         "content": {"application/json": {"schema": _ANSWER}}}}
    responses |= {code: {"description": why, "content": {"application/json": {"schema": _ERROR}}}
                  for code, why in _REFUSALS.items()}
    return {"post": {"summary": summary, "description": description,
                     "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                     "responses": responses}}


def scoring_paths(schema: Schema) -> dict[str, Any]:
    row = _row(schema)
    split = {"type": "object", "required": ["columns", "data"],
             "properties": {"columns": {"type": "array", "items": {"type": "string"}},
                            "data": {"type": "array", "items": {"type": "array"}}}}
    invocations = {"type": "object", "description": "MLflow's scoring protocol: one of the two keys",
                   "properties": {"dataframe_split": split, "dataframe_records": {"type": "array", "items": row}}}
    return {
        "/invocations": _operation("Score rows (MLflow's protocol)", "MLflow's scoring protocol: an `mlflow models "
                                   "serve` client works unchanged. Concurrent requests share forward passes.",
                                   invocations),
        "/predict": _operation("Score rows", "Rows as JSON objects, one per row; a row may give a keyed table's key "
                               "(the flights' `origin` and `time_hour`) instead of that table's columns.",
                               {"type": "object", "required": ["rows"],
                                "properties": {"rows": {"type": "array", "items": row}}}),
    }


def install(app: FastAPI, schema: Schema) -> None:
    """Serve an OpenAPI document that lists the scoring routes beside FastAPI's own."""
    plain = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = plain()
            document["paths"] = scoring_paths(schema) | document["paths"]
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
