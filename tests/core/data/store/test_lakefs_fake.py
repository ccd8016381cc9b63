"""The fake lakeFS itself: it serves only API operations, refuses what its contract forbids both ways, and
behaves like lakeFS where the store relies on it. Also: the lakeFS backend's configuration and secrets.

The server tests run once per contract available here: the ``lakefs_sdk`` models' always, lakeFS's spec
where ``spec_path()`` exists; the contract suite itself uses ``fake_lakefs.shared()``'s one.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterator

import lakefs_sdk
import pytest
import urllib3

from mlassets.core.data.store import StoreError, open_store
from mlassets.core.data.store.lakefs import LakeFSStore
from tests.core.data.store import fake_lakefs, fake_lakefs_api
from tests.core.data.store.fake_lakefs import BASE, FakeLakeFS, SpecContract, spec_path
from tests.core.data.store.fake_lakefs_sdk_check import SdkContract

CONTRACTS = ["sdk", "spec"] if spec_path().is_file() else ["sdk"]


@pytest.fixture(scope="module", params=CONTRACTS)
def server(request: pytest.FixtureRequest) -> Iterator[FakeLakeFS]:
    srv = FakeLakeFS(SpecContract(spec_path()) if request.param == "spec" else SdkContract(BASE))
    yield srv
    srv.stop()


def call(server: FakeLakeFS, method: str, path: str, body: object = None, auth: bool = True,
         secret: str = fake_lakefs.SECRET_ACCESS_KEY) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if auth:
        token = base64.b64encode(f"{fake_lakefs.ACCESS_KEY_ID}:{secret}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    resp = urllib3.request(method, server.url + BASE + path, headers=headers,
                           body=None if body is None else json.dumps(body))
    return resp.status, (resp.json() if resp.data else {})


def test_every_route_is_an_operation_of_the_contract(server: FakeLakeFS) -> None:
    for method, template, _ in fake_lakefs_api.ROUTES:
        assert server.contract.has_operation(method, template), f"{method} {template} is not in the API"
    assert not server.contract.has_operation("GET", "/repositories/{repository}/no-such-operation")


def test_request_the_contract_forbids_gets_400_and_is_recorded(server: FakeLakeFS) -> None:
    status, body = call(server, "POST", "/repositories", {"name": "Bad_Name", "storage_namespace": "local://x"})
    assert status == 400 and "[a-z0-9-]{2,62}" in body["message"]  # the pattern of a repository name
    status, body = call(server, "GET", "/repositories?amount=5000")  # above the API's maximum of 1000
    assert status == 400 and "amount" in body["message"]
    status, body = call(server, "POST", "/repositories/abc/branches/main/commits", {"metadata": {}})
    assert status == 400 and "message" in body["message"].split(": ", 1)[1]  # CommitCreation requires a message
    status, body = call(server, "POST", "/repositories/abc/tags", {"id": "v1", "ref": 7})  # ref must be a string
    assert status == 400 and "ref" in body["message"].split(": ", 1)[1]
    status, body = call(server, "GET", "/no/such/operation")
    assert status == 400 and "not an operation" in body["message"]
    problems = server.take_problems()
    assert len(problems) == 5 and all(p.startswith("request rejected") for p in problems)
    assert problems[0].startswith(f"request rejected: POST {BASE}/repositories: ")


def test_missing_or_wrong_credentials_get_401(server: FakeLakeFS) -> None:
    assert call(server, "GET", "/repositories", auth=False)[0] == 401
    assert call(server, "GET", "/repositories", secret="wrong")[0] == 401
    assert call(server, "GET", "/healthcheck", auth=False)[0] == 204  # the spec's only public operation
    assert server.take_problems() == []


def test_response_the_contract_forbids_is_refused_with_500(server: FakeLakeFS,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert call(server, "POST", "/repositories", {"name": "refused", "storage_namespace": "local://refused"})[0] == 201
    monkeypatch.setattr(fake_lakefs_api, "repo_json", lambda r: {"id": r.name})  # drops required fields
    status, body = call(server, "GET", "/repositories/refused")
    assert status == 500 and "refused to send" in body["message"]
    [problem] = server.take_problems()
    assert "response refused" in problem and "creation_date" in problem


def test_lakefs_semantics_through_the_sdk(server: FakeLakeFS) -> None:
    api = server.store().api
    repo = api.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name="semantics", storage_namespace="local://semantics"))
    root = api.commits_api.get_commit(repo.id, "main")
    assert re.fullmatch(r"[0-9a-f]{64}", root.id) and root.message == "Repository created" and root.parents == []
    with pytest.raises(lakefs_sdk.ApiException) as info:  # nothing staged: "no changes" unless allow_empty
        api.commits_api.commit(repo.id, "main", lakefs_sdk.CommitCreation(message="empty"))
    assert info.value.status == 400 and "no changes" in info.value.body
    empty = api.commits_api.commit(repo.id, "main", lakefs_sdk.CommitCreation(message="e", allow_empty=True))
    assert empty.parents == [root.id]
    api.branches_api.create_branch(repo.id, lakefs_sdk.BranchCreation(name="tmp", source="main", hidden=True))
    assert [b.id for b in api.branches_api.list_branches(repo.id).results] == ["main"]
    assert {b.id for b in api.branches_api.list_branches(repo.id, show_hidden=True).results} == {"main", "tmp"}
    with pytest.raises(lakefs_sdk.ApiException) as info:
        api.branches_api.delete_branch(repo.id, "main")
    assert info.value.status == 403
    with pytest.raises(lakefs_sdk.ApiException) as info:
        api.refs_api.merge_into_branch(repo.id, "main", "tmp")  # same content
    assert info.value.status == 400 and "no changes" in info.value.body
    with pytest.raises(lakefs_sdk.ApiException) as info:
        api.commits_api.get_commit(repo.id, "0" * 64)
    assert info.value.status == 404
    assert server.take_problems() == []


# ---------------------------------------------------------------- configuration and secrets


def test_configuration_from_the_sdk_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKECTL_SERVER_ENDPOINT_URL", "http://lakefs.example:8000/")
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", "env-secret-value")
    store = open_store("lakefs", namespace="s3://bucket/lakefs/{repo}")
    assert isinstance(store, LakeFSStore)
    assert store.settings.endpoint == "http://lakefs.example:8000"
    assert store._namespace("flights") == "s3://bucket/lakefs/flights"
    assert "env-secret-value" not in repr(store) + repr(store.settings) + str(store.settings)
    monkeypatch.delenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY")
    with pytest.raises(ValueError, match="LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY") as info:
        LakeFSStore()
    assert "AKIAEXAMPLE" not in str(info.value)


def test_secret_never_in_repr_errors_or_logs(server: FakeLakeFS, caplog: pytest.LogCaptureFixture) -> None:
    secret = fake_lakefs.SECRET_ACCESS_KEY
    basic = base64.b64encode(f"{fake_lakefs.ACCESS_KEY_ID}:{secret}".encode()).decode()
    store = server.store()
    store.client  # noqa: B018 (the SDK resets its loggers to WARNING when a client is made)
    for name in ("", "lakefs", "lakefs_sdk", "urllib3", "mlassets"):
        caplog.set_level(logging.DEBUG, logger=name)
    store.create_repo("secrets")
    store.commit("secrets", "main", {"a": b"1"}, "m")
    with pytest.raises(StoreError):
        store.read("secrets", "main", "missing")
    wrong = LakeFSStore(server.url + BASE, fake_lakefs.ACCESS_KEY_ID, "wrong-secret-abcdef")
    with pytest.raises(StoreError, match="401") as info:
        wrong.list_repos()
    chain, exc = [], info.value
    while exc is not None:
        chain.append(f"{exc!s} {exc!r}")
        exc = exc.__cause__ or exc.__context__
    assert "wrong-secret-abcdef" not in " ".join(chain)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "127.0.0.1" in logged  # the SDK's and urllib3's debug logs were captured
    for leaked in (secret, basic, "wrong-secret-abcdef"):
        assert leaked not in logged
    assert secret not in repr(store) + repr(store.settings)
    assert server.take_problems() == []
