"""``mlassets promote | rollback | history`` on a real MLflow registry: answers, refusals, exit codes."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime

import pytest

from mlassets.cli import main
from tests.core.registry import test_promotion as shared

reg = shared.reg  # the shared MLflow store (see tests/core/test_promotion.py)
Registry = shared.Registry


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _now() -> str:
    time.sleep(0.002)
    moment = datetime.now(UTC).isoformat()
    time.sleep(0.002)
    return moment


def test_promote_rollback_and_history_at(reg: Registry, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLASSETS_USER", "dana")
    reg.add(True, True, True)
    times = [_now()]
    for version in ("1", "2", "v3"):
        code, out, _ = _run(capsys, "promote", version, "--model", reg.name, "--reason", f"ship {version}")
        assert code == 0 and f"-> v{version.lstrip('v')} (promote, seq" in out and "by dana" in out
        times.append(_now())
    code, out, _ = _run(capsys, "rollback", "--model", reg.name, "--reason", "p99 regression in prod")
    assert code == 0 and "champion v3 -> v2 (rollback, seq 4, by dana: p99 regression in prod)" in out
    times.append(_now())
    answers = []
    for moment in times:
        code, out, _ = _run(capsys, "history", "--model", reg.name, "--at", moment)
        assert code == 0
        answers.append(out.split(": ", 1)[1].split(" was", 1)[0])
    assert answers == ["no version", "v1 (mlp)", "v2 (mlp)", "v3 (mlp)", "v2 (mlp)"]
    naive = times[2].replace("+00:00", "")  # no zone: UTC
    assert _run(capsys, "history", "--model", reg.name, "--at", naive)[1] == \
        _run(capsys, "history", "--model", reg.name, "--at", times[2])[1]
    code, out, _ = _run(capsys, "history", "--model", reg.name)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["seq", "at", "(UTC)", "action", "from", "to", "family", "who", "why"]
    assert lines[4].split()[3:] == ["rollback", "v3", "v2", "mlp", "dana", "p99", "regression", "in", "prod"]
    assert lines[-1].startswith("hash chain intact (4 rows, head ")
    assert reg.champion() == "2"


def test_bad_input_is_a_clear_error_and_changes_nothing(reg: Registry, capsys: pytest.CaptureFixture[str]) -> None:
    reg.add(True, False)
    assert _run(capsys, "promote", "1", "--model", reg.name)[0] == 0
    before = reg.log.entries()
    cases = {
        ("promote", "1", "--model", "nope"): "model 'nope' is not registered",
        ("promote", "1"): "model 'flights_arr_delay' is not registered",  # the default model
        ("promote", "9", "--model", reg.name): f"model '{reg.name}' has no version '9'",
        ("promote", "2", "--model", reg.name): f"model '{reg.name}' version 2 has no passing gate result",
        ("promote", "2", "--model", reg.name, "--force"): "needs a reason",
        ("promote", "1", "--model", reg.name): "already the champion",
        ("rollback", "--model", reg.name): "no earlier champion to roll back to (champion: v1)",
        ("rollback", "--model", "nope"): "model 'nope' is not registered",
        ("history", "--model", "nope"): "model 'nope' is not registered",
        ("history", "--model", reg.name, "--at", "last tuesday"): "is not ISO 8601",
    }
    for argv, message in cases.items():
        code, out, err = _run(capsys, *argv)
        assert (code, out) == (2, ""), argv
        assert err.startswith("mlassets: error: ") and message in err, (argv, err)
    _, _, err = _run(capsys, "promote", "2", "--model", reg.name)
    assert "--force --reason TEXT" in err
    assert reg.log.entries() == before and reg.champion() == "1"


def test_forced_promotion_and_a_tampered_log(reg: Registry, capsys: pytest.CaptureFixture[str]) -> None:
    reg.add(True, False)
    _run(capsys, "promote", "1", "--model", reg.name)
    code, out, _ = _run(capsys, "promote", "2", "--model", reg.name, "--force", "--reason", "gate data was broken")
    assert code == 0 and "(force-promote, seq 2" in out and reg.champion() == "2"
    code, out, _ = _run(capsys, "history", "--model", reg.name)
    assert code == 0 and "force-promote  v1" in out and "gate data was broken" in out
    with sqlite3.connect(reg.db) as conn:
        conn.execute("UPDATE promotions SET reason = 'routine' WHERE model = ? AND seq = 2", (reg.name,))
    code, out, _ = _run(capsys, "history", "--model", reg.name)
    assert code == 1 and "hash chain BROKEN" in out and "seq 2" in out
    code, _, err = _run(capsys, "rollback", "--model", reg.name)
    assert code == 2 and "damaged log" in err and reg.champion() == "2"


def test_without_model_the_one_config_of_ones_own_is_meant(home: str, tmp_path, capsys) -> None:
    """The model of the only registered config (a user's, not flights); several: the command asks which."""
    from mlassets.cli.registry import default_model
    from mlassets.core import paths
    from mlassets.core.config import load_config, save_config, shipped_configs
    from mlassets.examples.sales import write_example

    assert default_model() == "flights_arr_delay"  # nothing registered yet: the shipped demo's
    save_config(load_config(write_example(tmp_path / "sales", months=1)), paths.configs_dir())
    assert default_model() == "sales_units"
    code, _, err = _run(capsys, "history")
    assert code == 2 and "model 'sales_units' is not registered" in err  # asked about the user's model
    save_config(load_config(shipped_configs()["flights"]), paths.configs_dir())
    code, _, err = _run(capsys, "history")
    assert code == 2 and "--model: this stack has 2 models (flights_arr_delay, sales_units); name one" in err
