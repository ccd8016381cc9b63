"""Bearer tokens at the endpoint (red team): no token 401 with a Bearer challenge, a forged one 401, the wrong scope
403, a token in the query string 400; nothing scored for a refused request, and the token in no log line, span,
metric or answer. Beyond loopback ``mlassets serve`` will not start without a token unless told ``--insecure``."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mlassets.cli import main
from mlassets.cli.serve import auth_store
from mlassets.core import paths
from mlassets.core.identity.tokens import TokenStore
from mlassets.core.registry import promote
from mlassets.serve.auth import BearerAuth
from mlassets.serve.build import TRACE_FILE, build
from mlassets.serve.load import ServingError
from tests.serve.test_endpoint import Registry, _records, reg  # noqa: F401 - the shared registry fixture


@pytest.fixture
def guarded(reg: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201, F811
    monkeypatch.setenv("MLASSETS_TOKENS", str(tmp_path / "tokens.json"))
    store = TokenStore()
    tokens = {"predict": store.issue("scorer", ["predict"]), "admin": store.issue("operator", ["admin"])}
    reg.add(True)
    promote.promote(reg.name, "1")
    app = build(reg.name, "flights", poll=False)
    app.add_middleware(BearerAuth, store=store)
    with TestClient(app) as client:
        yield client, tokens, store


def _scored(client: TestClient) -> float:
    text = client.get("/metrics", headers=client.headers).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("mlassets_serving_requests_total{"))


def test_every_refusal_is_a_sentence_and_nothing_is_scored_or_leaked(guarded, caplog: pytest.LogCaptureFixture) -> None:
    client, tokens, store = guarded
    caplog.set_level(logging.DEBUG)
    body = {"rows": _records(2)}
    good = {"Authorization": f"Bearer {tokens['predict']}"}
    answers = []
    assert client.get("/health").status_code == 200 and client.get("/ready").status_code == 200  # probes stay open
    client.headers.update(good)
    before = _scored(client)
    client.headers.clear()

    answer = client.post("/predict", json=body)
    assert answer.status_code == 401 and answer.headers["www-authenticate"] == 'Bearer realm="mlassets"'
    assert answer.json()["error"] == "POST /predict needs a bearer token with the 'predict' scope"
    forged = tokens["predict"][:-3] + ("aaa" if not tokens["predict"].endswith("aaa") else "bbb")
    for header in (f"Bearer {forged}", f"Basic {tokens['predict']}", "Bearer mla_nonsense"):
        answers.append(client.post("/predict", json=body, headers={"Authorization": header}))
        assert answers[-1].status_code == 401, answers[-1].text
    assert "invalid_token" in answers[0].headers["www-authenticate"]
    answers.append(client.post("/predict", json=body, headers={"Authorization": f"Bearer {tokens['admin']}"}))
    assert answers[-1].status_code == 403 and answers[-1].json()["error"] == \
        "token 'operator' has the scopes admin, and POST /predict needs 'predict'"
    answers.append(client.post("/online", json={}, headers=good))  # a change to what is served: admin only
    assert answers[-1].status_code == 403 and "needs 'admin'" in answers[-1].json()["error"]
    for query in (f"token={tokens['predict']}", f"access_token={tokens['predict']}"):
        answers.append(client.post(f"/predict?{query}", json=body, headers=good))
        assert answers[-1].status_code == 400 and "query string is refused" in answers[-1].json()["error"]
    client.headers.update(good)
    assert _scored(client) == before  # no refused request reached the model
    ok = client.post("/predict", json=body)
    assert ok.status_code == 200 and len(ok.json()["predictions"]) == 2
    assert _scored(client) == before + 1

    store.revoke("scorer")  # takes effect without a restart
    assert client.post("/predict", json=body).status_code == 401

    server_log = [r.getMessage() for r in caplog.records if not r.name.startswith("httpx")]  # not the client's own
    seen = "\n".join([*server_log, client.get("/metrics", headers={"Authorization": f"Bearer {tokens['admin']}"}).text,
                      *(a.text + str(dict(a.headers)) for a in [*answers, ok]),
                      (paths.home() / TRACE_FILE).read_text() if (paths.home() / TRACE_FILE).exists() else ""])
    for token in tokens.values():
        assert token not in seen and token.split("_", 2)[2] not in seen


def test_beyond_loopback_a_token_is_required_unless_insecure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], home: str) -> None:
    monkeypatch.setenv("MLASSETS_TOKENS", str(tmp_path / "tokens.json"))
    assert auth_store("127.0.0.1", False) is None and auth_store("::1", False) is None  # loopback as before
    assert main(["serve", "some_model", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "refused: --host 0.0.0.0 is beyond loopback and no token with the 'predict' scope is configured" in err
    assert "--insecure" in err
    assert auth_store("0.0.0.0", True) is None
    TokenStore().issue("operator", ["admin"])  # not a predict token: still refused
    with pytest.raises(ServingError, match="no token with the 'predict' scope"):
        auth_store("10.0.0.5", False)
    TokenStore().issue("scorer", ["predict"])
    assert auth_store("0.0.0.0", False) is not None
    assert auth_store("127.0.0.1", False) is not None  # tokens exist: loopback checks them too
