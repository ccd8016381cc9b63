"""Every loader trusts only what the log and the record say (issue 22, cases 3, 4 and 7): serving, pyfunc and warm
start refuse a rewritten log row with the sentence ``history`` prints; a whole model folder (``MLmodel``
included) copied from another version is refused by ``mlflow.pyfunc.load_model('models:/NAME/VERSION')``; and
``history`` on a damaged log says what does repair it."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import mlflow
import pytest

from mlassets.cli import main
from mlassets.core.registry import promote
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promotion import PromotionError
from mlassets.core.registry.warm import verified_bundle
from mlassets.serve import ServingError, load_champion, load_version
from tests.core.registry import test_promotion as shared
from tests.core.registry.test_integrity import _log_bundle
from tests.core.registry.test_promotion import Registry, record

pytestmark = pytest.mark.e2e
reg = shared.reg


def _model_root(bundle_dir: Path) -> Path:
    """The logged model's folder (the one holding MLmodel) a bundle lies in."""
    return next(p for p in bundle_dir.resolve().parents if (p / "MLmodel").is_file())


def _rewrite_newest_row(reg: Registry, to_version: str) -> str:
    """What an attacker with write access to the log does: rewrite the newest row and recompute its hash."""
    last = reg.log.entries(reg.name)[-1]
    forged = last.__class__(**{**last.__dict__, "to_version": to_version, "hash": ""})
    with sqlite3.connect(reg.db) as conn:
        conn.execute("UPDATE promotions SET to_version = ?, hash = ? WHERE model = ? AND seq = ?",
                     (to_version, forged.expected_hash(), reg.name, last.seq))
    return f"promotion log of '{reg.name}', seq {last.seq}: the row was rewritten"


def test_a_rewritten_row_is_refused_by_serving_pyfunc_and_warm_start(reg: Registry, capsys) -> None:
    reg.add(True, True, True)
    for version in ("1", "2", "3"):
        promote.promote(reg.name, version)
    assert load_champion(reg.name).version == "3"
    problem = _rewrite_newest_row(reg, "1")  # the log now says v1 is live, and its chain holds
    assert reg.log.verify(reg.name) == []
    assert main(["history", "--model", reg.name]) == 1
    assert problem in capsys.readouterr().out
    with pytest.raises(ServingError, match=problem) as refused:  # it served 'version 1 gate passed'
        load_champion(reg.name)
    assert "refusing to act on a damaged log" in str(refused.value)
    with pytest.raises(PromotionError, match=problem):
        promote.trusted_live_version(reg.name)  # what a warm start asks before choosing its bundle
    with pytest.raises(Exception, match=problem):
        mlflow.pyfunc.load_model(f"models:/{reg.name}@champion")
    assert promote.live_version(reg.name) == "1"  # the row itself reads as before: only the checks refuse it


def test_history_says_what_repairs_a_broken_log(reg: Registry, capsys) -> None:
    reg.add(True, True)
    promote.promote(reg.name, "1")
    promote.promote(reg.name, "2")
    registry.set_alias(reg.name, registry.CHAMPION, "1")  # a drift as well, which alone the next promote repairs
    _rewrite_newest_row(reg, "1")
    assert main(["history", "--model", reg.name]) == 1
    out = capsys.readouterr().out
    assert "the next promote or rollback repairs it" not in out  # both refuse a damaged log
    assert "nothing automatic repairs a damaged promotion log: restore sqlite:///" in out
    assert "until then promote, rollback, serving and warm starts refuse" in out
    assert main(["rollback", "--model", reg.name]) == 2
    err = capsys.readouterr().err
    assert "the row was rewritten" in err and "Nothing automatic repairs a damaged promotion log" in err


def test_a_whole_model_folder_of_another_version_is_refused(reg: Registry, tmp_path: Path) -> None:
    names = []
    for seed in (1, 2):
        uri, weights = _log_bundle(seed, tmp_path)
        names.append(str(registry.register(reg.name, uri, record(True, weights)).version))
    roots = [_model_root(registry.bundle_dir(registry.get_version(reg.name, v))) for v in names]
    assert mlflow.pyfunc.load_model(f"models:/{reg.name}/{names[0]}") is not None
    saved = tmp_path / "saved"
    shutil.copytree(roots[0], saved)
    shutil.rmtree(roots[0])
    shutil.copytree(roots[1], roots[0])  # v2's whole folder, MLmodel and all, where v1's was
    mismatch = rf"'{reg.name}' version {names[0]}: its model folder .* does not match the seal in the registration " \
               r"history: MLmodel differs from the file registered"
    with pytest.raises(Exception, match=mismatch):  # it loaded v2's weights
        mlflow.pyfunc.load_model(f"models:/{reg.name}/{names[0]}")
    with pytest.raises(ServingError, match=mismatch):
        load_version(reg.name, names[0])
    with pytest.raises(registry.RegistryError, match=mismatch):
        verified_bundle(reg.name, names[0])  # a warm start from it
    assert mlflow.pyfunc.load_model(f"models:/{reg.name}/{names[1]}") is not None  # v2 itself still loads
    shutil.rmtree(roots[0])
    shutil.copytree(saved, roots[0])
    assert mlflow.pyfunc.load_model(f"models:/{reg.name}/{names[0]}") is not None
