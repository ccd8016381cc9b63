"""The fake lakeFS's contract where lakeFS's spec is absent: the operations of ``lakefs_sdk``, generated from it.

``SdkContract`` checks every request and response against what the SDK's generated code says about each
operation: method and path, security schemes, path/query/header parameters (the SDK's pydantic types and
bounds, e.g. ``amount <= 1000``), request media types, the JSON request body's model (``RepositoryCreation``,
``CommitCreation``, ``Merge``, ...), and the response model for each status (``Repository``, ``CommitList``,
``Error``, ...), validated with the models' own ``from_dict`` (pydantic v1, strict types: a missing required
field, a wrong type, or a value outside an enum or pattern fails). The generator keeps method, path and
response models in local variables of each ``*_with_http_info`` method, so they are read from the SDK's source
with ``ast``; an SDK whose generated code has another shape yields no operations and fails loudly. What the
generator drops is not checked here: string patterns of parameters, response headers, the spec's ``default``
response (an unlisted error status must carry an ``Error``). The spec, when present, stays the stricter check.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import lakefs_sdk
import lakefs_sdk.api
import lakefs_sdk.models
from pydantic.v1.fields import SHAPE_SINGLETON
from pydantic.v1.types import StrictBool
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from tests.core.data.store.fake_lakefs_util import ContractError, NotAnOperation, Unauthenticated


@dataclass(frozen=True)
class Operation:
    """One operation as the SDK generated it."""

    method: str
    template: str  # path template below the API base, e.g. "/repositories/{repository}"
    function: Any  # the SDK's ``*_with_http_info`` method; ``.model`` is the pydantic model of its arguments
    responses: dict[str, str | None]  # status -> SDK type name ("Repository", "List[Ref]", "str"); None: no body
    auth: tuple[str, ...]  # security schemes, any one of which will do; () for a public operation
    params: tuple[tuple[str, str, str], ...]  # (location "path"/"query"/"header", name on the wire, argument)
    body: str | None  # the argument that is the JSON request body
    content_types: tuple[str, ...]  # request media types

    @property
    def name(self) -> str:
        return self.function.__name__.removesuffix("_with_http_info")

    def body_model(self) -> type | None:
        return self.function.model.__fields__[self.body].type_ if self.body else None


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _argument(node: ast.AST) -> str | None:
    """``x`` for the generated ``_params['x']``."""
    if isinstance(node, ast.Subscript) and _name(node.value) == "_params" and isinstance(node.slice, ast.Constant):
        return node.slice.value
    return None


def _parse(fn: ast.FunctionDef) -> dict[str, Any]:
    """Method, path, responses, auth, parameters, body and media types from one ``*_with_http_info`` method."""
    found: dict[str, Any] = {"responses": {}, "auth": (), "params": [], "body": None, "content_types": ()}
    locations = {"_path_params": "path", "_header_params": "header"}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, args = node.func.attr, node.args
            if attr == "call_api":
                found["template"], found["method"] = args[0].value, args[1].value
            elif attr == "select_header_content_type":
                found["content_types"] = tuple(ast.literal_eval(args[0]))
            elif attr == "append" and _name(node.func.value) == "_query_params" and _argument(args[0].elts[1]):
                found["params"].append(("query", args[0].elts[0].value, _argument(args[0].elts[1])))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if _name(target) in ("_response_types_map", "_auth_settings"):
                found["responses" if _name(target) == "_response_types_map" else "auth"] = ast.literal_eval(value)
            elif _name(target) == "_body_params" and _argument(value):
                found["body"] = _argument(value)
            elif isinstance(target, ast.Subscript) and _name(target.value) in locations and _argument(value):
                found["params"].append((locations[_name(target.value)], target.slice.value, _argument(value)))
    return found


@cache
def sdk_operations() -> dict[tuple[str, str], Operation]:
    """Every operation of the installed ``lakefs_sdk``, by (method, path template)."""
    ops: dict[tuple[str, str], Operation] = {}
    for info in pkgutil.iter_modules(lakefs_sdk.api.__path__):
        module = importlib.import_module(f"lakefs_sdk.api.{info.name}")
        for cls in (n for n in ast.parse(inspect.getsource(module)).body if isinstance(n, ast.ClassDef)):
            for fn in cls.body:
                if not (isinstance(fn, ast.FunctionDef) and fn.name.endswith("_with_http_info")):
                    continue
                f = _parse(fn)
                if "template" in f:
                    ops[(f["method"], f["template"])] = Operation(
                        f["method"], f["template"], getattr(getattr(module, cls.name), fn.name), f["responses"],
                        tuple(f["auth"]), tuple(f["params"]), f["body"], f["content_types"])
    if not ops:
        raise RuntimeError(f"no operations found in lakefs_sdk {lakefs_sdk.__version__}: its generated code changed")
    return ops


def _schemes() -> dict[str, dict[str, str]]:
    """The SDK's security schemes (name -> type, where, key), from a configuration that has every credential."""
    config = lakefs_sdk.Configuration(username="u", password="p", access_token="t", api_key={"cookie_auth": "c"})
    return config.auth_settings()


def _from_text(raw: str, type_: Any) -> Any:
    """A parameter as its SDK type expects it (``"true"`` -> True for a bool, ``"5"`` -> 5 for an int).

    Booleans are case-insensitive: the SDK itself sends ``True``/``False`` (it turns a bool into ``str(v)`` before
    its lower-casing branch is reached), and lakeFS (Go's ``strconv.ParseBool``) and openapi-core accept both.
    """
    if isinstance(type_, type) and issubclass(type_, StrictBool | bool):
        return {"true": True, "false": False}.get(raw.lower(), raw)
    if isinstance(type_, type) and issubclass(type_, int) and re.fullmatch(r"-?[0-9]+", raw):
        return int(raw)
    return raw


def parse_model(name: str, value: Any) -> Any:
    """``value`` (decoded JSON) as the SDK model ``name``; ContractError if the model refuses it."""
    model = getattr(lakefs_sdk.models, name, None)
    if model is None:
        raise ContractError(f"lakefs_sdk has no model {name}")
    if not isinstance(value, dict):
        raise ContractError(f"{name}: expected a JSON object, got {type(value).__name__}")
    try:
        return model.from_dict(value)
    except (ValueError, TypeError, AttributeError) as exc:  # pydantic.v1's ValidationError is a ValueError
        raise ContractError(f"{name}: {exc}") from exc


_PRIMITIVES: dict[str, Any] = {"str": str, "int": int, "float": (int, float), "bool": bool, "object": object}


def conform(value: Any, kind: str) -> None:
    """Check decoded JSON against an SDK type name (a model, ``List[...]``, ``Dict[str, ...]``, a primitive)."""
    if m := re.fullmatch(r"(List|Dict)\[(str, )?(.+)\]", kind):
        container = list if m[1] == "List" else dict
        if not isinstance(value, container):
            raise ContractError(f"{kind}: expected a JSON {'array' if container is list else 'object'}")
        for item in (value if container is list else value.values()):
            conform(item, m[3])
    elif kind in _PRIMITIVES:
        if not isinstance(value, _PRIMITIVES[kind]) or (kind != "bool" and isinstance(value, bool)):
            raise ContractError(f"expected {kind}, got {type(value).__name__}")
    else:
        parse_model(kind, value)


class SdkContract:
    """The lakeFS API as ``lakefs_sdk`` describes it; same interface as ``fake_lakefs.SpecContract``."""

    name = "lakefs_sdk models"

    def __init__(self, base: str = "/api/v1") -> None:
        self.base = base
        self.operations = sdk_operations()
        self.schemes = _schemes()
        rules = [Rule(t.replace("{", "<").replace("}", ">"), endpoint=t) for t in {t for _, t in self.operations}]
        self.urls = Map(rules, strict_slashes=False).bind("lakefs")

    def has_operation(self, method: str, template: str) -> bool:
        return (method, template) in self.operations

    def match(self, request: Request) -> tuple[Operation, dict[str, str]]:
        """The operation a request calls, and its path parameters; NotAnOperation if none."""
        if not request.path.startswith(self.base + "/"):
            raise NotAnOperation(f"{request.path} is not below the API base {self.base}")
        try:
            template, values = self.urls.match(request.path[len(self.base):])
        except HTTPException as exc:
            raise NotAnOperation(f"no path of the lakeFS API matches {request.path}") from exc
        if (request.method, template) not in self.operations:
            raise NotAnOperation(f"{template} has no {request.method} operation")
        return self.operations[(request.method, template)], values

    def authenticated(self, request: Request, op: Operation) -> bool:
        """Whether the request carries credentials of a scheme the operation accepts (not whether they are right)."""
        for scheme in (self.schemes[s] for s in op.auth if s in self.schemes):
            if scheme["in"] == "cookie" and request.cookies.get(scheme["key"]):
                return True
            prefix = {"basic": "Basic ", "bearer": "Bearer "}.get(scheme["type"], "")
            value = request.headers.get(scheme["key"], "") if scheme["in"] == "header" else ""
            if value.startswith(prefix) and len(value) > len(prefix):
                return True
        return not op.auth

    def check_request(self, request: Request) -> None:
        op, path_values = self.match(request)
        if not self.authenticated(request, op):
            raise Unauthenticated(f"{op.name} needs credentials of one of {', '.join(op.auth)}")
        if request.mimetype and op.content_types and request.mimetype not in op.content_types:
            raise ContractError(f"{op.name}: media type {request.mimetype} is not one of {op.content_types}")
        fields, values = op.function.model.__fields__, {"self": None}
        sources = {"path": path_values, "query": request.args, "header": request.headers}
        for where, wire, arg in op.params:
            if where == "query" and fields[arg].shape != SHAPE_SINGLETON:  # an array: ?x=1&x=2
                if raws := request.args.getlist(wire):
                    values[arg] = [_from_text(r, fields[arg].type_) for r in raws]
            elif (raw := sources[where].get(wire)) is not None:
                values[arg] = _from_text(raw, fields[arg].type_)
        if op.body and (raw_body := request.get_data()):
            try:
                decoded = json.loads(raw_body)
            except ValueError as exc:
                raise ContractError(f"{op.name}: request body is not JSON: {exc}") from exc
            values[op.body] = parse_model(op.body_model().__name__, decoded)
        try:
            op.function.model(**values)
        except (ValueError, TypeError) as exc:
            raise ContractError(f"{op.name}: {exc}") from exc

    def check_response(self, request: Request, response: Response) -> None:
        op, _ = self.match(request)
        code, data = response.status_code, response.get_data()
        what = f"{op.name}'s {code} response"
        if request.method == "HEAD":  # no body is sent
            return
        if str(code) not in op.responses and code < 400 and op.responses:
            raise ContractError(f"{op.name} has no {code} response")
        # an unlisted error status is the spec's ``default`` response (an Error), which the generator drops;
        # an SDK method that returns nothing has no responses listed, and its successes have no body
        kind = op.responses.get(str(code), "Error" if code >= 400 else None)
        if kind is None and data:
            raise ContractError(f"{what} has no body, got {len(data)} bytes")
        if kind in (None, "bytearray"):
            return
        if kind == "str" and response.mimetype != "application/json":
            try:
                data.decode()
            except UnicodeDecodeError as exc:
                raise ContractError(f"{what} is not text: {exc}") from exc
            return
        if response.mimetype != "application/json":
            raise ContractError(f"{what} must be application/json, not {response.mimetype}")
        try:
            decoded = json.loads(data)
        except ValueError as exc:
            raise ContractError(f"{what} is not JSON: {exc}") from exc
        conform(decoded, kind)
