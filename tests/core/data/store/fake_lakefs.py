"""A fake lakeFS HTTP server on 127.0.0.1 that answers only what lakeFS's API contract allows.

Every request is checked against the contract before it is served: an invalid one gets 400 (401 without
credentials) and is recorded in ``rejected``. Every response is checked before it is sent: one the contract
does not allow is replaced by a 500 and recorded in ``violations``. The test suite asserts both lists stay
empty, so the ``lakefs`` SDK, driven by ``LakeFSStore``, talks to this server exactly as it may talk to a real
one. The contract is lakeFS's OpenAPI spec, checked with ``openapi-core`` (``SpecContract``: parameters,
bodies, security), where the spec file is present (``$MLASSETS_LAKEFS_SPEC``, by default
``../shared/lakefs/swagger.yml``); elsewhere it is the models ``lakefs_sdk`` generated from that spec
(``fake_lakefs_sdk_check.SdkContract``), so the suite runs wherever the project installs. The operations
served are ``fake_lakefs_api.ROUTES``; their semantics live in ``fake_lakefs_model``.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from openapi_core import OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse
from openapi_core.exceptions import OpenAPIError
from openapi_core.templating.paths.exceptions import PathError
from openapi_core.validation.request.exceptions import SecurityValidationError
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from mlassets.core.data.store.lakefs import LakeFSStore
from tests.core.data.store.fake_lakefs_api import ROUTES
from tests.core.data.store.fake_lakefs_model import LakeFSError, Model
from tests.core.data.store.fake_lakefs_sdk_check import SdkContract
from tests.core.data.store.fake_lakefs_util import ContractError, NotAnOperation, Unauthenticated

PROJECT_ROOT = Path(__file__).resolve().parents[4]
DEFAULT_SPEC = PROJECT_ROOT.parent / "shared" / "lakefs" / "swagger.yml"
SPEC_ENV = "MLASSETS_LAKEFS_SPEC"
BASE = "/api/v1"
ACCESS_KEY_ID = "AKIAIOSFODNN7FAKELFS"
SECRET_ACCESS_KEY = "fake-lakefs-secret-never-logged-0123456789"


def spec_path() -> Path:
    """Where lakeFS's OpenAPI spec is looked for: ``$MLASSETS_LAKEFS_SPEC`` if set (and not empty), else the default."""
    return Path(os.environ.get(SPEC_ENV) or DEFAULT_SPEC)


class Contract(Protocol):
    """What the fake checks requests and responses against; raises ``ContractError`` (or a subclass)."""

    name: str

    def has_operation(self, method: str, template: str) -> bool: ...

    def check_request(self, request: Request) -> None: ...

    def check_response(self, request: Request, response: Response) -> None: ...


@cache
def openapi(spec: Path) -> OpenAPI:
    return OpenAPI.from_file_path(str(spec))


class SpecContract:
    """lakeFS's OpenAPI spec, checked with ``openapi-core`` (the stricter check: every schema, pattern, header)."""

    name = "spec"

    def __init__(self, spec: Path) -> None:
        self.openapi = openapi(spec)

    def has_operation(self, method: str, template: str) -> bool:
        paths = self.openapi.spec / "paths"
        return template in paths and method.lower() in paths / template

    def check_request(self, request: Request) -> None:
        try:
            self.openapi.validate_request(WerkzeugOpenAPIRequest(request))
        except PathError as exc:
            raise NotAnOperation(str(exc)) from exc
        except SecurityValidationError as exc:
            raise Unauthenticated(str(exc)) from exc
        except OpenAPIError as exc:
            raise ContractError(str(exc)) from exc

    def check_response(self, request: Request, response: Response) -> None:
        try:
            self.openapi.validate_response(WerkzeugOpenAPIRequest(request), WerkzeugOpenAPIResponse(response))
        except OpenAPIError as exc:
            raise ContractError(str(exc)) from exc


def load_contract(spec: Path | None = None) -> Contract:
    """The spec's contract if the spec file (default: ``spec_path()``) exists, else the SDK models' contract."""
    spec = spec_path() if spec is None else spec
    return SpecContract(spec) if spec.is_file() else SdkContract(BASE)


def error(status: int, message: str) -> Response:
    return Response(json.dumps({"message": message}), status=status, mimetype="application/json")


class _Quiet(WSGIRequestHandler):
    def log_request(self, *args: object, **kwargs: object) -> None:
        pass


class FakeLakeFS:
    """The server: ``url``, credentials, and what it refused (``rejected``, ``violations``) and served."""

    def __init__(self, contract: Contract | None = None, access_key_id: str = ACCESS_KEY_ID,
                 secret_access_key: str = SECRET_ACCESS_KEY) -> None:
        self.contract = load_contract() if contract is None else contract
        self.model = Model()
        self.credentials = (access_key_id, secret_access_key)
        self.rejected: list[str] = []
        self.violations: list[str] = []
        self.served: Counter[tuple[str, str]] = Counter()
        rules = [Rule(BASE + t.replace("{", "<").replace("}", ">"), endpoint=(method, t, fn), methods=[method])
                 for method, t, fn in ROUTES]
        self.urls = Map(rules, strict_slashes=False)
        self._server = make_server("127.0.0.1", 0, self.wsgi, threaded=True, request_handler=_Quiet)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-lakefs", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def store(self) -> LakeFSStore:
        return LakeFSStore(self.url + BASE, *self.credentials)

    def take_problems(self) -> list[str]:
        """Rejected requests and refused responses since the last call (and forget them)."""
        problems = [f"request rejected: {r}" for r in self.rejected] + [f"response refused: {v}"
                                                                         for v in self.violations]
        self.rejected.clear()
        self.violations.clear()
        return problems

    # ------------------------------------------------------------ request handling

    def wsgi(self, environ: dict, start_response: Any) -> Any:
        return self.respond(Request(environ))(environ, start_response)

    def respond(self, request: Request) -> Response:
        what = f"{request.method} {request.full_path.rstrip('?')}"
        api = f"the lakeFS API ({self.contract.name})"
        try:
            self.contract.check_request(request)
        except NotAnOperation as exc:  # nothing to check a response against
            self.rejected.append(f"{what}: {exc}")
            return error(400, f"not an operation of {api}: {exc}")
        except Unauthenticated as exc:
            response = error(401, f"error authenticating request: {exc}")
        except ContractError as exc:
            self.rejected.append(f"{what}: {exc}")
            response = error(400, f"request does not follow {api}: {exc}")
        else:
            response = self.dispatch(request)
        try:
            self.contract.check_response(request, response)
        except ContractError as exc:
            self.violations.append(f"{what} -> {response.status_code}: {exc}")
            return error(500, f"fake lakeFS refused to send a response {api} does not allow: {exc}")
        return response

    def authorized(self, request: Request) -> bool:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Basic "):
            return False
        try:
            key, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        except ValueError:
            return False
        return (key, secret) == self.credentials

    def dispatch(self, request: Request) -> Response:
        try:
            (method, template, handler), params = self.urls.bind_to_environ(request.environ).match()
        except HTTPException:
            return error(404, "not implemented by the fake lakeFS")
        if template != "/healthcheck" and not self.authorized(request):
            return error(401, "error authenticating request")
        self.served[(request.method, template)] += 1
        try:
            with self.model.lock:
                status, body = handler(self.model, request, **params)
        except LakeFSError as exc:
            return error(exc.status, exc.message)
        if isinstance(body, Response):
            return body
        if status == 204 or body is None:
            return Response(status=status)
        if isinstance(body, str):
            return Response(body, status=status, mimetype="text/html")
        return Response(json.dumps(body), status=status, mimetype="application/json")


_shared: FakeLakeFS | None = None
_shared_lock = threading.Lock()


def running() -> FakeLakeFS | None:
    return _shared


def shared() -> FakeLakeFS:
    """The one fake server of this test process (started on first use), checked by ``load_contract()``."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = FakeLakeFS()
    return _shared
