"""A user's own Python reaches the registry of an mlassets home in one line: ``mlassets.use_home()`` or
``eval "$(mlassets env)"``, without setting MLflow's variables by hand and without a stray ``./mlflow.db``."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest

import mlassets
from mlassets.cli import main
from mlassets.core import tracking
from mlassets.core.home_env import NoHome, exports


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home with one registered model, and a working folder outside it with no MLflow variable set."""
    home = tmp_path / "home"
    for name in ("MLASSETS_HOME", "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLASSETS_PROFILE"):
        monkeypatch.setenv(name, "x")  # so that what use_home sets is undone after the test
        monkeypatch.delenv(name)
    mlflow.set_registry_uri(None)
    monkeypatch.setenv("MLASSETS_HOME", str(home))
    tracking.configure()
    mlflow.MlflowClient().create_registered_model("users_model")
    monkeypatch.delenv("MLASSETS_HOME")
    mlflow.set_tracking_uri(None)
    work = tmp_path / "notebook"
    work.mkdir()
    monkeypatch.chdir(work)
    yield home
    mlflow.set_registry_uri(None)
    mlflow.set_tracking_uri(None)


def test_use_home_finds_the_homes_models_from_another_folder(elsewhere: Path) -> None:
    uri = mlassets.use_home(elsewhere)
    assert uri == f"sqlite:///{elsewhere / 'mlflow.db'}" == mlassets.tracking_uri(elsewhere)
    assert mlflow.MlflowClient().get_registered_model("users_model").name == "users_model"
    assert os.environ["MLASSETS_HOME"] == str(elsewhere)  # mlassets' own loaders find its promotion log too
    assert not (Path.cwd() / "mlflow.db").exists() and not (Path.cwd() / ".mlassets").exists()


def test_a_folder_without_a_store_is_named_and_nothing_is_created(elsewhere: Path, capsys) -> None:
    with pytest.raises(NoHome, match=r"\.mlassets.*holds no MLflow store \(mlflow\.db is missing\)"):
        mlassets.use_home()  # ./.mlassets of the working folder: none
    assert main(["env"]) == 2 and "holds no MLflow store" in capsys.readouterr().err
    assert list(Path.cwd().iterdir()) == []


def test_mlassets_env_prints_lines_a_shell_evaluates(elsewhere: Path, capsys) -> None:
    assert main(["env", "--home", str(elsewhere)]) == 0
    out = capsys.readouterr().out
    script = f'{out}\nprintf "%s\\n" "$MLFLOW_TRACKING_URI" "$MLASSETS_HOME"'
    shown = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert shown == [f"sqlite:///{elsewhere / 'mlflow.db'}", str(elsewhere)]


def test_exports_quote_and_never_print_a_password() -> None:
    text = exports({"A": "it's here", "MLFLOW_TRACKING_URI": "https://ana:secret@mlflow.example.com"})
    assert text.splitlines()[0] == f"export A={shlex.quote(chr(39).join(['it', 's here']))}"
    assert "secret" not in text and "MLFLOW_TRACKING_URI is set already" in text
