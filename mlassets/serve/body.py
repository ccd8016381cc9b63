"""A request's body before its rows: the content type, the size limit and the JSON, each refused with a 4xx.

A body the server will not read is the client's to fix, never a 500 nor a model failure in the metrics: a missing
or wrong content type is a 415, a body over ``serving.max_body_bytes`` a 413, text that is not JSON (or nests deeper
than the parser goes, ~1,000 levels) a 400.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from mlassets.serve.rows import BadRequest

JSON = "application/json"


def check_type(request: Request) -> None:
    """A 415 unless the request says its body is ``application/json`` (parameters such as a charset aside)."""
    given = request.headers.get("content-type")
    if given is None:
        raise BadRequest(415, f"the request has no content type; send {JSON}")
    if given.split(";")[0].strip().lower() != JSON:
        raise BadRequest(415, f"content type {given!r} is not accepted; send {JSON}")


async def read(request: Request, limit: int) -> bytes:
    """The whole body, or a 413 as soon as it passes ``limit`` bytes (declared or read)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BadRequest(413, f"the body of {int(declared)} bytes is over the limit of {limit} bytes "
                              "(serving.max_body_bytes)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadRequest(413, f"the body is over the limit of {limit} bytes (serving.max_body_bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes) -> Any:
    """The body's JSON value, or a 400 saying why it is not one."""
    try:
        return json.loads(body)
    except UnicodeDecodeError:
        raise BadRequest(400, "the body is not UTF-8 text; send JSON") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
            from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise BadRequest(400, f"the body is not valid JSON: {str(exc).splitlines()[0][:120]}") from None
    except RecursionError:
        raise BadRequest(400, "the body nests too deep to read (about 1,000 levels or more); a row is a flat "
                              "object of column values") from None
