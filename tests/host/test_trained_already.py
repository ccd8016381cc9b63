"""``mlassets run`` asks the registry the run would register in whether the data version is trained already, before
it launches anything: a plain re-run of a trained version says so at once and names ``--again``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mlflow
import pytest

from mlassets.core import paths
from mlassets.core.registry.made import Made
from mlassets.host import run_lock
from tests.core.registry import test_promotion as shared

reg = shared.reg
Registry = shared.Registry


def test_a_trained_version_is_found_whatever_mlflow_pointed_at_before(reg: Registry, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (version,) = reg.add(True)
    made = Made.of(shared.record(True))  # what the registered version was made from
    monkeypatch.setattr(Made, "now", classmethod(lambda _cls, _cfg, _commit, _warm="": made))
    cfg = dataclasses.replace(shared.FLIGHTS, model=dataclasses.replace(shared.FLIGHTS.model,
                                                                        registered_name=reg.name))
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'elsewhere.db'}")  # a process that never pointed MLflow home
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # (MLflow exports what it was set to)
    found = run_lock.existing_candidate(cfg, made.data_commit)
    assert found is not None and found.version == str(version)
    assert mlflow.get_tracking_uri() == paths.mlflow_tracking_uri()
    assert not (tmp_path / "elsewhere.db").exists()  # nothing was asked of (or created in) another store
