"""access.yaml: parsed with errors naming the key and value; roles per team; refusals one sentence naming the user,
the team and the action; the principal is the uid's user, not a name the caller sets; no file, no checks."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from mlassets.core.config import ConfigError
from mlassets.core.identity import access
from mlassets.core.identity.access import AccessDenied, authorize, load_access, parse_access

RULES = {"admins": ["root-ops"], "teams": {"ranking": {"owners": ["alice"], "members": ["bob"]},
                                          "fraud": {"owners": ["carol"]}}}


def test_roles_per_team() -> None:
    rules = parse_access(RULES)
    assert rules.roles("alice", "ranking") == {"owner", "member"}
    assert rules.roles("bob", "ranking") == {"member"}
    assert rules.roles("bob", "fraud") == set()
    assert rules.roles("root-ops", "fraud") == {"admin", "owner", "member"}
    assert rules.roles("alice", None) == set()


@pytest.mark.parametrize(("data", "named"), [
    ({"admin": ["x"]}, "admin: unknown key (admins, teams)"),
    ({"teams": {"ranking": {"owner": ["a"]}}}, "teams.ranking.owner: unknown key (owners, members)"),
    ({"teams": {"ranking": {"members": "bob"}}}, "teams.ranking.members: must be a list of user names, got 'bob'"),
    ({"teams": {"Bad Team": {}}}, "teams.Bad Team: 'Bad Team' is not a name"),
    ({"admins": [3]}, "admins: must be a list of user names, got [3]"),
    (["alice"], "access: must be a mapping"),
])
def test_bad_rules_name_the_key_and_value(data: object, named: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        parse_access(data)
    assert named in str(caught.value)


def test_refusals_name_user_team_and_action() -> None:
    rules = parse_access(RULES)
    assert authorize("submit", "ranking", "job 'x'", user="bob", access=rules) == "bob"
    assert authorize("promote", "fraud", user="root-ops", access=rules) == "root-ops"
    with pytest.raises(AccessDenied) as caught:
        authorize("submit", "fraud", "job 'x'", user="bob", access=rules)
    assert str(caught.value) == ("user 'bob' may not submit job 'x' of team 'fraud': that needs a member of team "
                                 "'fraud' in access.yaml; nothing changed")
    with pytest.raises(AccessDenied, match="user 'bob' may not promote model 'm' of team 'ranking': that needs an "
                                           "owner of team 'ranking'"):
        authorize("promote", "ranking", "model 'm'", user="bob", access=rules)
    with pytest.raises(AccessDenied, match="no dataset config names its team, so only a platform admin may"):
        authorize("promote", None, "model 'm'", user="alice", access=rules)
    with pytest.raises(AccessDenied, match="user 'alice' may not prune .* only a platform admin"):
        authorize("prune", None, "the home", user="alice", access=rules)


def test_the_principal_is_the_uid_not_a_claimed_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    (tmp_path / "access.yaml").write_text(f"teams:\n  ranking:\n    owners: [{me}]\n")
    monkeypatch.setenv("MLASSETS_ACCESS", str(tmp_path / "access.yaml"))
    for var in ("MLASSETS_USER", "USER", "LOGNAME"):
        monkeypatch.setenv(var, "mallory")
    assert authorize("promote", "ranking") == me
    with pytest.raises(AccessDenied, match=f"user '{me}' may not submit job 'j' of team 'fraud'"):
        authorize("submit", "fraud", "job 'j'")


def test_no_file_keeps_single_user_mode(home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLASSETS_ACCESS", raising=False)
    monkeypatch.delenv("MLASSETS_FLEET", raising=False)
    monkeypatch.setenv("MLASSETS_USER", "dana")
    assert load_access() is None
    assert authorize("promote", "any-team") == "dana"  # nothing checked, the name as before


def test_file_found_beside_the_fleet_and_a_named_one_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               home: str) -> None:
    monkeypatch.delenv("MLASSETS_ACCESS", raising=False)
    monkeypatch.setenv("MLASSETS_FLEET", str(tmp_path / "fleet.yaml"))
    (tmp_path / "access.yaml").write_text("admins: [x]\nteams:\n  ranking:\n    owners: 5\n")
    with pytest.raises(ConfigError, match=r"access.yaml: teams.ranking.owners: must be a list of user names, got 5"):
        load_access()
    assert access.access_path() == tmp_path / "access.yaml"
    monkeypatch.setenv("MLASSETS_ACCESS", str(tmp_path / "nowhere.yaml"))
    with pytest.raises(ConfigError, match="MLASSETS_ACCESS: access file .*nowhere.yaml' does not exist"):
        load_access()


def test_the_team_is_looked_up_only_when_checks_are_on(home: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLASSETS_ACCESS", raising=False)
    monkeypatch.delenv("MLASSETS_FLEET", raising=False)
    asked: list[str] = []
    authorize("promote", lambda: asked.append("team") or "ranking")
    assert asked == []  # single-user mode reads no dataset config
    rules = parse_access(RULES)
    assert authorize("promote", lambda: asked.append("team") or "ranking", user="alice", access=rules) == "alice"
    assert asked == ["team"]
