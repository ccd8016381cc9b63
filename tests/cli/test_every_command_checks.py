"""Every command of the ``mlassets`` parser either checks a principal (and is refused here, before it changes
anything, for a user access.yaml grants nothing) or is listed as changing nothing shared, with the reason: a new
command that is in neither list fails this test, so none slips through unchecked (docs/identity.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mlassets.cli import build_parser, main
from mlassets.core.identity.access import ACTIONS, os_user
from mlassets.examples.fleet import write_fleet_example

# command: (its arguments after the command, the access action it checks); the model ``m`` is named by no config
CHECKED = {
    ("demo",): (["--config", "flights"], "ingest"),
    ("ingest",): (["--config", "flights", "--partition", "2013-01"], "ingest"),
    ("run",): (["--config", "flights"], "run"),
    ("promote",): (["1", "--model", "m"], "promote"),
    ("rollback",): (["--model", "m"], "rollback"),
    ("adopt",): (["1", "--model", "m"], "adopt"),
    ("online", "start"): (["m", "1"], "online"),
    ("online", "promote"): (["m", "--reason", "ship"], "online"),
    ("online", "rollback"): (["m", "--reason", "no"], "online"),
    ("online", "labels"): (["m", "labels.csv"], "online"),
    ("serve",): (["m", "--port", "1"], "serve"),
    ("ui",): (["--port", "1"], "operate"),
    ("daemon",): ([], "operate"),
    ("fleet", "submit"): (["--job", "{jobs}/batch/job.json"], "submit"),
    ("fleet", "serve"): (["--seconds", "0.1"], "operate"),
    ("prune",): ([], "prune"),
    ("prune-transactions",): ([], "prune"),
    ("token", "issue"): (["ci"], "tokens"),
    ("token", "rotate"): (["ci"], "tokens"),
    ("token", "revoke"): (["ci"], "tokens"),
}
READ_ONLY = {
    ("versions",): "lists a dataset's data versions, gate decisions and champion",
    ("example",): "writes an example's files into a folder the caller names; nothing shared",
    ("history",): "reads the promotion log, the alias and the anchor",
    ("rebuild",): "an audit: retrains a version in a scratch worktree and compares predictions; the registry, the "
                  "promotion log and the data branches stay as they were (the features cache is content-addressed)",
    ("doctor",): "checks the setup and says what is wrong; writes nothing",
    ("diagnose",): "reads a run's telemetry, or an endpoint's, and says where the time goes",
    ("online", "status"): "reads the promotion log and the endpoint's GET /online",
    ("fleet",): "shows the fleet: its jobs and the home's Dagster runs that carry a job spec",
    ("fleet", "kueue"): "prints Kubernetes manifests; kubectl and the cluster's RBAC decide who applies them",
    ("fleet", "dagster-yaml"): "prints the run queue's team limits",
    ("fleet", "example"): "writes the walk-through's files into the folder --out names; nothing shared",
    ("fleet", "lease-guard"): "a pod's own command under the lease the scheduler granted to a job checked when "
                              "it was submitted",
    ("token", "list"): "the tokens' names, scopes and issue times, never a token",
    ("whoami",): "says who this shell acts as",
    ("env",): "prints the export lines that point a shell at the home's registry; changes nothing",
}


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command the parser runs: a parser with a function and no required subcommand, and its subcommands."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    out = [] if any(s.required for s in subs) or not path else [path]
    for sub in subs:
        for name, child in sub.choices.items():
            out += commands(child, (*path, name))
    return out


def files(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*") if not p.is_dir())


def test_every_command_is_checked_or_listed_as_changing_nothing_shared() -> None:
    found = set(commands(build_parser()))
    assert not set(CHECKED) & set(READ_ONLY)
    assert found - set(CHECKED) - set(READ_ONLY) == set(), "a new command: check a principal or list it read-only"
    assert set(CHECKED) | set(READ_ONLY) == found  # no stale entry either
    assert {action for _, action in CHECKED.values()} <= set(ACTIONS)
    assert all(len(reason) > 20 for reason in READ_ONLY.values())


@pytest.mark.parametrize("command", sorted(CHECKED), ids=" ".join)
def test_each_checked_command_refuses_a_user_with_no_role_and_changes_nothing(
        command: tuple[str, ...], home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_fleet_example(tmp_path / "jobs")
    monkeypatch.setenv("MLASSETS_FLEET", str(tmp_path / "jobs" / "fleet.yaml"))
    monkeypatch.setenv("MLASSETS_TOKENS", str(tmp_path / "tokens.json"))
    (tmp_path / "access.yaml").write_text("admins: [someone-else]\nteams:\n  research:\n    owners: [someone-else]\n")
    monkeypatch.setenv("MLASSETS_ACCESS", str(tmp_path / "access.yaml"))
    monkeypatch.setenv("MLASSETS_USER", "someone-else")  # a claimed name: ignored once access.yaml exists
    monkeypatch.chdir(tmp_path)
    argv, action = CHECKED[command]
    before = files(tmp_path)
    code = main([*command, *(a.format(jobs=tmp_path / "jobs") for a in argv)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), (command, out, err)
    assert f"user '{os_user()}' may not {action} " in err and err.rstrip().endswith("nothing changed"), err
    assert files(tmp_path) == before  # no instance, store, log or token (an empty home folder is no state)
