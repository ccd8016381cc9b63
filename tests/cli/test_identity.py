"""Identity on the commands (red team): with access.yaml the OS user acts; submitting as another team, promoting,
rolling back or testing online another team's model, pruning without being an admin are each refused with one
sentence naming the user, the team and the action, and change nothing; the log records the OS user, never the
``$MLASSETS_USER`` a caller claims; tokens are shown once."""

from __future__ import annotations

import dataclasses
import json
import os
import pwd
from pathlib import Path

import pytest

from mlassets.core.config import load_config, save_config, shipped_configs
from mlassets.core.identity.tokens import TokenStore
from mlassets.examples.fleet import write_fleet_example
from tests.cli.test_registry import Registry, _run, reg  # noqa: F401 - the shared registry fixture

ME = pwd.getpwuid(os.getuid()).pw_name


def _access(path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    path.write_text(text)
    monkeypatch.setenv("MLASSETS_ACCESS", str(path))
    monkeypatch.setenv("MLASSETS_USER", "mallory")  # a claimed name: ignored once access.yaml exists


def test_submit_as_another_team_is_refused(home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    write_fleet_example(tmp_path / "jobs")
    monkeypatch.setenv("MLASSETS_FLEET", str(tmp_path / "jobs" / "fleet.yaml"))
    _access(tmp_path / "access.yaml", monkeypatch, f"teams:\n  product:\n    members: [{ME}]\n  research: {{}}\n")
    batch = str(tmp_path / "jobs" / "batch" / "job.json")  # team research
    for argv in (["--job", batch], ["--job", str(tmp_path / "jobs" / "urgent" / "job.json"), "--team", "research"]):
        code, out, err = _run(capsys, "fleet", "submit", *argv)
        assert (code, out) == (2, "")
        assert f"user '{ME}' may not submit job " in err and "of team 'research': that needs a member of team " \
            "'research' in access.yaml; nothing changed" in err
    assert json.loads(_run(capsys, "fleet", "--json")[1])["jobs"] == []  # nothing queued, not even as refused
    code, out, _ = _run(capsys, "fleet", "submit", "--job", batch, "--team", "product")
    assert code == 0 and out.rstrip().endswith(f"by {ME}")
    (job,) = json.loads(_run(capsys, "fleet", "--json")[1])["jobs"]
    assert job["team"] == "product" and job["who"] == ME


def _owned_by(team: str, model: str, where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_config(shipped_configs()["flights"])
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, registered_name=model),
                              fleet=dataclasses.replace(cfg.fleet_job, team=team))
    where.mkdir()
    save_config(cfg, where)
    monkeypatch.setenv("MLASSETS_CONFIGS", str(where))


def test_promote_another_teams_model_is_refused_and_the_log_names_the_os_user(
        reg: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    reg.add(True, True)
    _owned_by("fraud", reg.name, tmp_path / "configs", monkeypatch)
    _access(tmp_path / "access.yaml", monkeypatch, f"teams:\n  fraud:\n    members: [{ME}]\n    owners: [carol]\n"
                                                   f"  ranking:\n    owners: [{ME}]\n")
    refusal = f"user '{ME}' may not {{}} model '{reg.name}' of team 'fraud': that needs an owner of team 'fraud'"
    for argv, action in ((["promote", "1", "--model", reg.name], "promote"), (["rollback", "--model", reg.name],
                         "rollback"), (["online", "start", reg.name, "1"], "online"),
                         (["adopt", "1", "--model", reg.name], "adopt")):
        code, out, err = _run(capsys, *argv)
        assert (code, out) == (2, "") and refusal.format(action) in err and "nothing changed" in err, (argv, err)
    assert reg.log.entries() == [] and reg.champion() is None
    _access(tmp_path / "access.yaml", monkeypatch, f"teams:\n  fraud:\n    owners: [{ME}]\n")
    code, out, _ = _run(capsys, "promote", "1", "--model", reg.name, "--reason", "ship")
    assert code == 0 and f"by {ME}: ship" in out and "mallory" not in out
    assert [e.who for e in reg.log.entries()] == [ME] and reg.champion() == "1"


def test_a_model_no_config_names_needs_an_admin(reg: Registry, tmp_path: Path,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    reg.add(True)
    _access(tmp_path / "access.yaml", monkeypatch, f"teams:\n  fraud:\n    owners: [{ME}]\n")
    code, _, err = _run(capsys, "promote", "1", "--model", reg.name)
    assert code == 2 and "no dataset config names its team, so only a platform admin may" in err
    _access(tmp_path / "access.yaml", monkeypatch, f"admins: [{ME}]\n")
    assert _run(capsys, "promote", "1", "--model", reg.name)[0] == 0 and reg.log.entries()[0].who == ME


def test_prune_and_tokens_need_an_admin_and_a_token_is_shown_once(home: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MLASSETS_TOKENS", str(tmp_path / "tokens.json"))
    _access(tmp_path / "access.yaml", monkeypatch, f"teams:\n  fraud:\n    owners: [{ME}]\n")
    for argv in (["prune"], ["prune-transactions"], ["token", "issue", "ci"]):
        code, _, err = _run(capsys, *argv)
        assert code == 2 and f"user '{ME}' may not" in err and "only a platform admin" in err, (argv, err)
    assert not (tmp_path / "tokens.json").exists()
    assert _run(capsys, "prune", "--dry-run")[0] == 0  # reading is anyone's
    _access(tmp_path / "access.yaml", monkeypatch, f"admins: [{ME}]\n")
    code, out, err = _run(capsys, "token", "issue", "ci", "--scope", "predict")
    token = out.strip()
    assert code == 0 and TokenStore().verify(token).name == "ci" and "shown once" in err and token not in err
    code, out, _ = _run(capsys, "token", "list")
    assert code == 0 and out.startswith("ci\tpredict\t") and token not in out
    code, out, _ = _run(capsys, "token", "rotate", "ci")
    assert code == 0 and TokenStore().verify(token) is None and TokenStore().verify(out.strip()) is not None
    assert _run(capsys, "whoami")[1].startswith(f"{ME} (platform admin)")


def test_a_run_of_another_teams_dataset_is_refused_before_anything_opens(home: str, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    team = load_config(shipped_configs()["flights"]).fleet_job.team
    _access(tmp_path / "access.yaml", monkeypatch, f"teams:\n  elsewhere:\n    members: [{ME}]\n")
    for argv, action in ((["run", "--config", "flights", "--again"], "retrain"), (["run", "--config", "flights"],
                                                                               "run")):
        code, out, err = _run(capsys, *argv)
        assert (code, out) == (2, "") and f"user '{ME}' may not {action} dataset 'flights' of team '{team}'" in err
    assert not (Path(home) / "dagster").exists()  # no instance opened, nothing launched
