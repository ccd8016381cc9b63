"""Rebuild a registered model from its registry record alone: identical predictions, or the reason why not."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlassets.cli import main
from mlassets.core import lineage, tracking
from mlassets.core.registry import versions
from mlassets.core.registry.rebuild import RebuildReport, environment_reasons, rebuild
from mlassets.core.registry.versions import RegistryError
from mlassets.core.train.result import Environment
from tests.core.data.store import fake_lakefs
from tests.core.data.store.conftest import _fake_lakefs_stays_in_spec  # noqa: F401 - the spec check, here too
from tests.core.registry.test_promotion import record

pytestmark = pytest.mark.e2e
MODEL = "flights_arr_delay"


def _demo_in_a_clone(root: Path, **env: str) -> Path:
    """One version trained and registered by a clean clone of this repository's HEAD; returns its home."""
    clone, home = root / "clone", root / "home"
    subprocess.run(["git", "clone", "-q", str(lineage.PROJECT_ROOT), str(clone)], check=True)
    full = {**os.environ, "PYTHONPATH": str(clone), "MLASSETS_HOME": str(home), **env}
    for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI"):
        full.pop(var, None)
    done = subprocess.run([sys.executable, "-m", "mlassets.cli", "demo", "--months", "1", "--sample", "0.1",
                           "--broken-month", ""], cwd=clone, env=full, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return home


@pytest.fixture(scope="module")
def registered(tmp_path_factory) -> Path:
    return _demo_in_a_clone(tmp_path_factory.mktemp("rebuild"))


def _lakefs_env() -> dict[str, str]:
    server = fake_lakefs.shared()  # the spec-validated fake lakeFS server, on 127.0.0.1
    return {"LAKECTL_SERVER_ENDPOINT_URL": server.url + fake_lakefs.BASE,
            "LAKECTL_CREDENTIALS_ACCESS_KEY_ID": server.credentials[0],
            "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY": server.credentials[1]}


@pytest.fixture(scope="module")
def registered_on_lakefs(tmp_path_factory) -> Path:
    """The same, with the data versions in lakeFS: the pipeline's store switched by ``MLASSETS_STORE``."""
    store = fake_lakefs.shared().store()
    for repo in ("flights", "flights-derived"):  # the shared fake server keeps what other tests wrote
        if repo in store.list_repos():
            store.delete_repo(repo)
    return _demo_in_a_clone(tmp_path_factory.mktemp("rebuild-lakefs"), MLASSETS_STORE="lakefs", **_lakefs_env())


@pytest.fixture
def in_home(registered, monkeypatch) -> Path:
    monkeypatch.setenv("MLASSETS_HOME", str(registered))
    for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(var, raising=False)
    return registered


def test_rebuild_from_the_record_alone_is_identical(in_home, capsys):
    shutil.rmtree(in_home / "work")  # every local training artifact and cache is gone
    report = rebuild(MODEL, "1")
    assert report.identical, report.lines()
    assert report.weights_match and report.rows > 0 and report.max_abs_diff == 0.0
    assert report.not_exact_because == []
    assert main(["rebuild", MODEL, "--version", "1"]) == 0
    assert "identical predictions" in capsys.readouterr().out


def test_a_model_trained_on_lakefs_is_rebuilt_from_lakefs(registered_on_lakefs, monkeypatch, capsys):
    home = registered_on_lakefs
    monkeypatch.setenv("MLASSETS_HOME", str(home))
    for var, value in _lakefs_env().items():  # where lakeFS is: the record names the backend, not the server
        monkeypatch.setenv(var, value)
    for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_STORE"):
        monkeypatch.delenv(var, raising=False)
    assert not (home / "store").exists()  # the data went to lakeFS only
    shutil.rmtree(home / "work")
    tracking.configure()
    assert versions.record_of(versions.get_version(MODEL, "1")).store_backend == "lakefs"
    report = rebuild(MODEL, "1")  # reads the recorded commit from lakeFS, not from a local store
    assert report.identical and report.weights_match and report.rows > 0, report.lines()
    assert not (home / "store").exists()


@pytest.mark.parametrize(("model", "version", "message"), [
    ("no_such_model", "1", "model 'no_such_model' has no version '1'"),
    (MODEL, "99", f"model '{MODEL}' has no version '99'"),
])
def test_unknown_model_or_version_is_a_clear_error(in_home, capsys, model, version, message):
    with pytest.raises(RegistryError, match=message):
        rebuild(model, version)
    assert main(["rebuild", model, "--version", version]) == 2
    assert message in capsys.readouterr().err


def test_reasons_a_rebuild_cannot_be_exact():
    here = Environment(threads=1, world_size=1, **lineage.environment())
    same = dataclasses.replace(record(True), environment=here, lock_hash=lineage.lock_hash())
    assert environment_reasons(same) == []
    other = dataclasses.replace(here, cpu_capability="NO AVX", torch_version="1.0", cpu_model="Intel Xeon",
                                blas="openblas")
    reasons = environment_reasons(dataclasses.replace(same, git_dirty=True, environment=other))
    assert any("dirty" in r for r in reasons)
    assert any(r.startswith("cpu_capability was 'NO AVX'") for r in reasons)
    assert any(r.startswith("torch_version was '1.0'") for r in reasons)
    assert f"cpu_model was 'Intel Xeon', here it is {lineage.cpu_model()!r}" in reasons  # MKL's paths differ
    assert f"blas was 'openblas', here it is {lineage.blas()!r}" in reasons


def test_report_says_how_predictions_differ():
    report = RebuildReport("m", "3", rows=10, identical=False, max_abs_diff=0.25, weights_match=False,
                           not_exact_because=["cpu_capability was 'AVX2', here it is 'AVX512'"])
    text = "\n".join(report.lines())
    assert "predictions DIFFER" in text and "0.25" in text and "cannot be exact: cpu_capability" in text
