"""Request parsing and lakeFS pagination shared by the fake lakeFS's handlers; the errors of its contract checks."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from werkzeug.wrappers import Request


class ContractError(Exception):
    """A request or response the lakeFS API does not allow (raised by both of the fake's contract checks)."""


class NotAnOperation(ContractError):
    """A request for no operation of the lakeFS API (so there is nothing to check its response against)."""


class Unauthenticated(ContractError):
    """A request without credentials of a security scheme its operation accepts (lakeFS answers 401)."""


def flag(req: Request, name: str, default: bool = False) -> bool:
    value = req.args.get(name)
    return default if value is None else value.lower() == "true"


def body(req: Request) -> dict[str, Any]:
    return json.loads(req.get_data() or b"{}")


def page(items: Sequence[Any], key: Callable[[Any], str], req: Request, *, sorted_by_key: bool = True) -> dict:
    """lakeFS pagination: ``after`` (exclusive) and ``amount`` (default 100, at most 1000)."""
    after, amount = req.args.get("after") or "", int(req.args.get("amount") or 100)
    amount = amount if 0 < amount <= 1000 else 100
    keys = [key(i) for i in items]
    if after:
        start = sum(1 for k in keys if k <= after) if sorted_by_key else (keys.index(after) + 1 if after in keys else 0)
        items = items[start:]
    chunk, more = list(items[:amount]), len(items) > amount
    return {"pagination": {"has_more": more, "next_offset": key(chunk[-1]) if more else "",
                           "results": len(chunk), "max_per_page": 1000}, "results": chunk}
