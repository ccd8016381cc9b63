"""Tokens: shown once, stored as a salted hash (0600), scoped, rotated and revoked by name; a forged or revoked one
is not verified."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mlassets.core.config import ConfigError
from mlassets.core.identity.tokens import TokenStore


def test_issue_verify_rotate_revoke(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    token = store.issue("ci", ["predict"])
    text = (tmp_path / "tokens.json").read_text()
    assert token not in text and token.split("_", 2)[2] not in text  # only the hash is kept
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    record = TokenStore(tmp_path / "tokens.json").verify(token)  # another reader of the same file
    assert record is not None and record.name == "ci" and record.scopes == ("predict",)
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert store.verify(forged) is None
    assert store.verify("mla_" + "0" * 12 + "_" + token.split("_", 2)[2]) is None  # a right secret, wrong id
    assert store.verify(token + " ") is None and store.verify("") is None
    rotated = store.rotate("ci")
    assert store.verify(token) is None and store.verify(rotated).scopes == ("predict",)
    store.revoke("ci")
    assert store.verify(rotated) is None and store.records() == {}


def test_bad_requests_name_the_value(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    with pytest.raises(ConfigError, match="--scope: 'root' is not a scope"):
        store.issue("ci", ["root"])
    store.issue("ci", ["predict", "admin"])
    with pytest.raises(ConfigError, match="token 'ci' exists; rotate it"):
        store.issue("ci", ["predict"])
    with pytest.raises(ConfigError, match="token 'nope' does not exist"):
        store.revoke("nope")
    with pytest.raises(ConfigError, match="token name: 'Bad Name' is not a name"):
        store.issue("Bad Name", ["predict"])
