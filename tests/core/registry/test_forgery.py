"""The registry takes no forged version (issue 33, case 3): a registered model's MLflow folder copied and
registered again by hand, as a new version of the same model or under a new name, carrying v1's tags and run,
is refused by ``promote`` (CLI too, without ``--force`` and with it) and by every loader (serving, pyfunc,
warm start); so is a version whose record tags were edited after mlassets registered it."""

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
from mlassets.serve import ServingError, load_version
from tests.core.registry import test_promotion as shared
from tests.core.registry.test_promotion import Registry

pytestmark = pytest.mark.e2e
reg = shared.reg
FORGED = "was not registered by mlassets"


def _forge(reg: Registry, name: str, tmp_path: Path) -> str:
    """What a user with MLflow access does: copy v1's logged model folder and register the copy by hand, with
    v1's run and tags."""
    v1 = registry.get_version(reg.name, "1")
    root = next(p for p in registry.bundle_dir(v1).resolve().parents if (p / "MLmodel").is_file())
    copy = tmp_path / f"copy-{name}"
    shutil.copytree(root, copy)
    client = mlflow.MlflowClient()
    if name != reg.name:
        client.create_registered_model(name)
    return str(client.create_model_version(name, copy.as_uri(), run_id=v1.run_id, tags=dict(v1.tags)).version)


def _refused_everywhere(name: str, version: str, match: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(PromotionError, match=match):
        promote.promote(name, version)
    with pytest.raises(PromotionError, match=match):
        promote.promote(name, version, force=True, reason="looks fine")
    assert main(["promote", version, "--model", name]) != 0
    assert match in capsys.readouterr().err.replace("\n", " ")
    with pytest.raises(ServingError, match=match):
        load_version(name, version)
    with pytest.raises(Exception, match=match):
        mlflow.pyfunc.load_model(f"models:/{name}/{version}")
    with pytest.raises(registry.RegistryError, match=match):
        verified_bundle(name, version)  # a warm start from it


def test_a_copied_folder_registered_again_or_under_a_new_name_is_refused(reg: Registry, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    v1 = str(reg.add(True)[0])
    assert mlflow.pyfunc.load_model(f"models:/{reg.name}/{v1}") is not None  # the genuine one loads
    forged = _forge(reg, reg.name, tmp_path)
    assert forged == "2"
    _refused_everywhere(reg.name, forged, FORGED, capsys)
    other = f"{reg.name}_copy"
    renamed = _forge(reg, other, tmp_path)
    _refused_everywhere(other, renamed, FORGED, capsys)
    assert [e.to_version for e in reg.log.entries(reg.name)] == []  # nothing was promoted
    promote.promote(reg.name, v1)  # the genuine version still is promotable
    assert reg.champion() == v1


def test_a_record_edited_after_registration_or_a_rewritten_registration_row_is_refused(
        reg: Registry, capsys: pytest.CaptureFixture) -> None:
    rejected, passed = (str(v) for v in reg.add(False, True))
    client = mlflow.MlflowClient()
    client.set_model_version_tag(reg.name, rejected, "gate_passed", "true")  # a rejected candidate made to pass
    _refused_everywhere(reg.name, rejected, "its record_sha256 differ from what mlassets registered", capsys)
    from mlassets.core.registry.registrations import RegistrationLog

    log = RegistrationLog()
    row = next(e for e in log.entries(reg.name) if e.to_version == passed)
    forged = row.__class__(**{**row.__dict__, "to_version": rejected, "hash": ""})
    with sqlite3.connect(reg.db) as conn:  # rewritten with its hash recomputed: the chain or anchor tells
        conn.execute("UPDATE registrations SET to_version = ?, hash = ? WHERE model = ? AND seq = ?",
                     (rejected, forged.expected_hash(), reg.name, row.seq))
    with pytest.raises(PromotionError, match="registration history of .* is damaged"):
        promote.promote(reg.name, passed)


def test_a_refusal_names_the_log_path_with_its_case(tmp_path: Path) -> None:
    """Issue 33: the sentence serving, pyfunc and warm start print named ``.../hb/home/promotions.db`` for ``hB``."""
    from mlassets.core.registry.projection import LogState, refuse_if_damaged
    from mlassets.core.registry.promotion import PromotionLog

    (tmp_path / "hB").mkdir()
    log = PromotionLog(f"sqlite:///{tmp_path / 'hB' / 'promotions.db'}")
    with pytest.raises(PromotionError) as refused:
        refuse_if_damaged("Sales_Model", log, LogState(live=None, head=None, problems=["seq 2 was rewritten"]))
    said = str(refused.value)
    assert f"Nothing automatic repairs a damaged promotion log: restore sqlite:///{tmp_path / 'hB'}" in said
    assert "of 'Sales_Model'" in said
