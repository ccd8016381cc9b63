"""The fake lakeFS without lakeFS's spec: choosing the contract, and the ``lakefs_sdk`` models' contract catching
what the spec would (a request the SDK's models refuse gets 400, a response they refuse is replaced by a 500).

These run without ``../shared/lakefs/swagger.yml``; the last test, which checks that the SDK's contract names the
spec's models for every route the fake serves, is collected only where the spec is present.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import lakefs_sdk
import pytest
import urllib3
import yaml
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Response

from tests.core.data.store import fake_lakefs, fake_lakefs_api, fake_lakefs_objects
from tests.core.data.store.fake_lakefs import (
    BASE,
    DEFAULT_SPEC,
    SPEC_ENV,
    FakeLakeFS,
    SpecContract,
    load_contract,
    spec_path,
)
from tests.core.data.store.fake_lakefs_sdk_check import SdkContract, sdk_operations
from tests.core.data.store.fake_lakefs_util import ContractError

MINIMAL_SPEC = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": BASE}],
                "paths": {"/healthcheck": {"get": {"responses": {"204": {"description": "ok"}}}}}}
SDK_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "object": "object"}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLakeFS]:
    srv = FakeLakeFS(SdkContract(BASE))
    srv.store().create_repo("sdk-mode")
    srv.store().commit("sdk-mode", "main", {"a.txt": b"a"}, "one object")
    yield srv
    srv.stop()


def send(server: FakeLakeFS, method: str, path: str, body: bytes | None = None,
         content_type: str = "application/json") -> tuple[int, dict]:
    token = base64.b64encode(f"{fake_lakefs.ACCESS_KEY_ID}:{fake_lakefs.SECRET_ACCESS_KEY}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", **({"Content-Type": content_type} if body is not None else {})}
    resp = urllib3.request(method, server.url + BASE + path, headers=headers, body=body)
    return resp.status, (resp.json() if resp.data else {})


def test_spec_location_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(SPEC_ENV, raising=False)
    assert spec_path() == DEFAULT_SPEC
    monkeypatch.setenv(SPEC_ENV, str(tmp_path / "missing.yml"))
    assert spec_path() == tmp_path / "missing.yml" and isinstance(load_contract(), SdkContract)
    (tmp_path / "swagger.yml").write_text(yaml.safe_dump(MINIMAL_SPEC))
    monkeypatch.setenv(SPEC_ENV, str(tmp_path / "swagger.yml"))
    contract = load_contract()  # that file, not the default one: it has only the health check
    assert isinstance(contract, SpecContract) and contract.has_operation("GET", "/healthcheck")
    assert not contract.has_operation("GET", "/repositories")


def test_sdk_contract_reads_each_operation_from_the_sdk() -> None:
    ops = sdk_operations()
    create = ops[("POST", "/repositories")]
    assert create.body_model() is lakefs_sdk.RepositoryCreation and create.content_types == ("application/json",)
    assert create.responses["201"] == "Repository" and create.responses["409"] == "Error"
    assert ("query", "bare", "bare") in create.params and "basic_auth" in create.auth
    assert ops[("GET", "/healthcheck")].auth == ()  # the API's one public operation
    assert ("path", "commitId", "commit_id") in ops[("GET", "/repositories/{repository}/commits/{commitId}")].params
    assert ops[("HEAD", "/repositories/{repository}/refs/{ref}/objects")].name == "head_object"
    merge = ops[("POST", "/repositories/{repository}/refs/{sourceRef}/merge/{destinationBranch}")]
    assert merge.body_model() is lakefs_sdk.Merge and merge.responses["409"] == "MergeResult"


R = "/repositories/sdk-mode"


@pytest.mark.parametrize(("method", "path", "body", "content_type", "blamed"), [
    ("POST", "/repositories", {"name": "no-namespace"}, None, "storage_namespace"),  # a required field is missing
    ("POST", f"{R}/branches", {"name": "b", "source": 5}, None, "source"),  # a string field gets a number
    ("POST", f"{R}/refs/main/merge/main", {"squash_merge": "yes"}, None, "squash_merge"),  # not a boolean
    ("POST", f"{R}/branches/main/commits", {"message": "m", "metadata": {"k": 1}}, None, "metadata"),
    ("POST", f"{R}/tags", ["v1", "main"], None, "expected a JSON object"),
    ("POST", f"{R}/tags", b"{", None, "not JSON"),
    ("POST", f"{R}/tags", None, None, "tag_creation"),  # the body is required
    ("POST", f"{R}/tags", {"id": "v1", "ref": "main"}, "text/plain", "media type"),
    ("GET", f"{R}/refs/main/objects/stat", None, None, "path\n  field required"),  # a required query parameter
    ("GET", f"{R}/branches?show_hidden=maybe", None, None, "show_hidden"),
    ("GET", f"{R}/tags?amount=ten", None, None, "amount"),
])
def test_request_the_sdk_models_refuse_gets_400_and_is_recorded(
        server: FakeLakeFS, method: str, path: str, body: object, content_type: str | None, blamed: str) -> None:
    raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    status, answer = send(server, method, path, raw, content_type or "application/json")
    assert status == 400 and blamed in answer["message"]
    [problem] = server.take_problems()
    assert problem.startswith(f"request rejected: {method} {BASE}{path.split('?')[0]}") and blamed in problem


def test_valid_requests_pass_the_sdk_contract(server: FakeLakeFS) -> None:
    assert send(server, "POST", f"{R}/tags", json.dumps({"id": "ok", "ref": "main"}).encode())[0] == 201
    assert send(server, "GET", f"{R}/branches?show_hidden=True&amount=2")[0] == 200  # how the SDK spells a bool
    assert send(server, "GET", f"{R}/refs/main/objects/stat?path=a.txt")[0] == 200
    assert send(server, "GET", f"{R}/refs/main/objects/stat?path=missing")[0] == 404  # an Error body
    assert server.take_problems() == []


def _commit_with(**changes: object) -> object:
    original = fake_lakefs_api.commit_json
    return lambda c: {k: v for k, v in {**original(c), **changes}.items() if v is not None}


@pytest.mark.parametrize(("module", "name", "replacement", "path", "blamed"), [
    (fake_lakefs_api, "commit_json", _commit_with(creation_date="yesterday"), f"{R}/commits/main", "creation_date"),
    (fake_lakefs_api, "commit_json", _commit_with(parents=None), f"{R}/refs/main/commits", "parents"),  # in a list
    (fake_lakefs_api, "commit_json", _commit_with(metadata={"n": 1}), f"{R}/commits/main", "metadata"),
    (fake_lakefs_api, "repo_json", lambda r: [r.name], R, "expected a JSON object"),
    (fake_lakefs_objects, "stats_json", lambda p, e, m=True: {"path": p, "path_type": "file", "checksum": "c",
                                                              "physical_address": "x", "mtime": 0},
     f"{R}/refs/main/objects/stat?path=a.txt", "path_type"),  # not one of the enum's values
    (fake_lakefs, "error", lambda status, message: Response(json.dumps({"error": message}), status=status,
                                                            mimetype="application/json"),
     f"{R}/commits/{'0' * 64}", "Error"),  # an error body without its required message
], ids=["wrong-type", "missing-field-in-a-list", "wrong-type-in-a-dict", "not-an-object", "not-in-enum", "error"])
def test_response_the_sdk_models_refuse_is_refused_with_500(
        server: FakeLakeFS, monkeypatch: pytest.MonkeyPatch, module: object, name: str, replacement: object,
        path: str, blamed: str) -> None:
    monkeypatch.setattr(module, name, replacement)
    status, _ = send(server, "GET", path)
    assert status == 500
    [problem] = server.take_problems()
    assert problem.startswith(f"response refused: GET {BASE}{path}") and blamed in problem


@pytest.mark.parametrize(("method", "path", "status", "body", "mimetype", "refusal"), [
    ("POST", f"{R}/tags", 200, {"id": "v", "commit_id": "c"}, "application/json", "has no 200 response"),
    ("GET", R, 200, "<html/>", "text/html", "must be application/json"),
    ("GET", R, 200, "{", "application/json", "is not JSON"),
    ("DELETE", f"{R}/branches/b", 204, {"message": "gone"}, "application/json", "has no body"),
    ("GET", f"{R}/commits/c", 500, {"message": "boom"}, "application/json", None),  # the spec's default: an Error
    ("GET", f"{R}/refs/main/objects?path=a", 200, "\x00binary", "application/octet-stream", None),
    ("POST", f"{R}/branches", 201, "0" * 64, "text/html", None),  # createBranch answers the head as text
])
def test_sdk_contract_checks_status_and_media_type_of_responses(
        method: str, path: str, status: int, body: object, mimetype: str, refusal: str | None) -> None:
    request = EnvironBuilder(method=method, path=BASE + path).get_request()
    response = Response(body if isinstance(body, str) else json.dumps(body), status=status, mimetype=mimetype)
    if refusal is None:
        SdkContract(BASE).check_response(request, response)
    else:
        with pytest.raises(ContractError, match=refusal):
            SdkContract(BASE).check_response(request, response)


if spec_path().is_file():  # collected only where the spec is: it is what the SDK's contract is checked against

    def test_sdk_contract_names_the_spec_models_of_every_route() -> None:
        spec = yaml.load(spec_path().read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

        def model(item: dict) -> str | None:  # the schema a request body or response names, or None
            while "$ref" in item:
                item = spec["components"][item["$ref"].split("/")[2]][item["$ref"].split("/")[3]]
            schema = next(iter(item.get("content", {}).values()), {}).get("schema")
            if not schema or "$ref" in schema:
                return schema and schema["$ref"].rsplit("/", 1)[-1]
            return "bytearray" if schema.get("format") == "binary" else SDK_TYPES[schema["type"]]

        for method, template, _ in fake_lakefs_api.ROUTES:
            op, sdk = spec["paths"][template][method.lower()], sdk_operations()[(method, template)]
            responses = {str(s): model(r) for s, r in op["responses"].items() if s != "default"}
            body = model(op["requestBody"]) if "requestBody" in op else None
            body = None if body in ("object", "bytearray") else body  # an upload: a form or raw bytes, no model
            assert (sdk.body_model().__name__ if sdk.body else None) == body, f"{method} {template} request body"
            if sdk.responses:  # methods that return nothing have an empty map (see SdkContract.check_response)
                assert responses == sdk.responses, f"{method} {template} responses"
            else:
                assert all(v in (None, "Error") for v in responses.values()), f"{method} {template} responses"
