"""A version registered before the registration history existed (issue 33): refused by every loader until
``mlassets adopt VERSION`` checks its run, folder, record and the Dagster run that registered it, and writes its row
into the hash chain; a copy of its folder registered by hand, carrying its run and tags, is not adopted."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import mlflow
import pytest

from mlassets.cli import main
from mlassets.core import paths, tracking
from mlassets.core.registry import versions as registry
from mlassets.core.registry.registrations import ANCHOR_TAG, RegistrationLog
from mlassets.core.registry.warm import verified_bundle

pytestmark = pytest.mark.e2e
NOT_REGISTERED = "was not registered by mlassets"


def _as_before_the_history(name: str) -> None:
    """The home as an mlassets without the registration history left it: no rows, no anchor."""
    with sqlite3.connect(paths.home() / "promotions.db") as db:
        db.execute("DELETE FROM registrations WHERE model = ?", (name,))
    mlflow.MlflowClient().delete_registered_model_tag(name, ANCHOR_TAG)


def _copy_of_v1(name: str, tmp_path: Path) -> str:
    v1 = registry.get_version(name, "1")
    root = next(p for p in registry.bundle_dir(v1).resolve().parents if (p / "MLmodel").is_file())
    shutil.copytree(root, tmp_path / "copy")
    client = mlflow.MlflowClient()
    return str(client.create_model_version(name, (tmp_path / "copy").as_uri(), run_id=v1.run_id,
                                           tags=dict(v1.tags)).version)


def test_an_old_version_is_adopted_after_its_checks_and_a_copy_is_not(home: str, tmp_path: Path, capsys) -> None:
    assert main(["example", "sales", str(tmp_path / "sales"), "--months", "1"]) == 0
    config = str(tmp_path / "sales" / "sales.yaml")
    assert main(["ingest", "--config", config, "--partition", "2024-01"]) == 0
    assert main(["run", "--config", config]) == 0
    tracking.configure()
    name = "sales_units"
    _as_before_the_history(name)
    with pytest.raises(registry.RegistryError, match=NOT_REGISTERED):
        verified_bundle(name, "1")  # refused by every loader (warm start here) until adopted
    forged = _copy_of_v1(name, tmp_path)
    capsys.readouterr()

    assert main(["adopt", forged, "--config", config]) == 2
    said = capsys.readouterr().err
    assert f"version {forged} cannot be adopted" in said and "says it registered version 1, not 2" in said
    assert "Nothing was written" in said and RegistrationLog().entries(name) == []

    assert main(["adopt", "v1", "--config", config]) == 0
    assert "adopted into the registration history (seq 1)" in capsys.readouterr().out
    (row,) = RegistrationLog().entries(name)
    assert row.to_version == "1" and row.who.endswith("(mlassets adopt)")
    assert verified_bundle(name, "1")  # loads now
    assert main(["history", "--config", config]) == 0  # the chain and its anchor are intact

    assert main(["adopt", forged, "--config", config]) == 2  # still a copy: v1 from the same run is held now
    assert "came from the same run: this one is a copy" in capsys.readouterr().err
    assert main(["adopt", "1", "--config", config]) == 2
    assert "in the registration history already" in capsys.readouterr().err
    assert [e.to_version for e in RegistrationLog().entries(name)] == ["1"]
