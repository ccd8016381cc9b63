"""A torch plug-in (family torch) gets what the built-in network gets: 2 ranks under torchrun, exact resume after
a SIGKILL, the record of its code; and bad plug-ins are refused before any data is read, naming what is wrong."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from mlassets.core.config import ConfigError, parse_config
from mlassets.core.train import plugin
from mlassets.core.train.family import family_of
from mlassets.core.train.feature_spec import FeatureSpec
from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import train_command
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.examples.torch_plugin import MODEL

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[3]
TRAINING = {"epochs": 2, "checkpoint_every_steps": 4, "keep_last": 2, "nproc": 2}  # 16 steps of 128 rows


def _config(model_file: Path, **training: object) -> dict:
    model = {"family": "torch", "plugin": f"{model_file}:build", "params": {"width": 16, "depth": 1}}
    return tiny_config(model=model, **{**TRAINING, **training})


def _job(data: tuple[Path, Path], out: Path, model_file: Path, **training: object) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    return TrainJob(_config(model_file, **training), str(data[0]), str(data[1]), str(out), "v1").to_json(
        out / "job.json")


def _env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    return {**base, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[tuple[Path, Path], Path, Path]:
    root = tmp_path_factory.mktemp("plugin")
    model_file = root / "model.py"
    model_file.write_text(MODEL)
    data = write_splits(root / "data", 1000, 300)
    reference = root / "reference"
    proc = subprocess.run(train_command(2, _job(data, reference, model_file)), capture_output=True, text=True,
                          env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return data, model_file, reference


def test_a_plugin_trains_on_two_ranks_and_records_its_code(setup) -> None:
    _, model_file, reference = setup
    result = read_outcome(reference).result
    assert result.environment.world_size == 2 and result.family == "torch"
    assert result.model_code == {"plugin": f"{model_file}:build",
                                 "plugin_sha256": hashlib.sha256(model_file.read_bytes()).hexdigest()}
    assert result.curves[-1]["val_metric"] < result.curves[0]["val_metric"] * 1.5  # it trained, not diverged


def test_a_plugin_killed_mid_run_resumes_bit_identically(setup, tmp_path: Path) -> None:
    data, model_file, reference = setup
    job = _job(data, tmp_path, model_file, faults={"slow_loader_ms": 100})
    proc = subprocess.Popen(train_command(2, job), env=_env(), start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    first = tmp_path / "checkpoints" / "step-000000004"
    deadline = time.monotonic() + 120
    while not first.is_dir() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # every rank and the agent, as a lost machine would
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL and first.is_dir() and not (tmp_path / "result.json").exists()
    done = subprocess.run(train_command(2, _job(data, tmp_path, model_file)), capture_output=True, text=True,
                          env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from checkpoint step-" in done.stderr
    resumed, expected = read_outcome(tmp_path).result, read_outcome(reference).result
    assert resumed.resumed_from_step >= 4
    assert resumed.final_weights_sha256 == expected.final_weights_sha256
    assert resumed.weights_sha256 == expected.weights_sha256


def test_bad_plugins_are_refused_naming_what_is_wrong(tmp_path: Path) -> None:
    not_module = tmp_path / "nothing.py"
    not_module.write_text("def build(spec):\n    return 'a string'\n")
    cases = {
        f"{tmp_path / 'missing.py'}:build": "does not exist",
        f"{not_module}:absent": "names no function",
        f"{not_module}:build": "returned str, not a torch.nn.Module",
        "no_such_package.model:build": "cannot be imported",
    }
    for spec, message in cases.items():
        cfg = parse_config(tiny_config(model={"family": "torch", "plugin": spec}))  # the syntax is right ...
        with pytest.raises(plugin.PluginError, match=message):  # ... the code is not
            family_of("torch").build(FeatureSpec([3, 4], 2, 1, "regression"), dataclasses.asdict(cfg.model))
    with pytest.raises(ConfigError, match="model.plugin: family 'torch' needs"):
        parse_config(tiny_config(model={"family": "torch"}))
    with pytest.raises(ConfigError, match="model.plugin: 'nope' is neither"):
        parse_config(tiny_config(model={"family": "torch", "plugin": "nope"}))


def test_a_plugin_whose_output_has_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    wide = tmp_path / "wide.py"
    wide.write_text("import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self, n):\n"
                    "        super().__init__()\n        self.lin = nn.Linear(n, 3)\n\n"
                    "    def forward(self, x_cat, x_num):\n        return self.lin(x_num)\n\n"
                    "def build(spec):\n    return M(spec.n_numeric)\n")
    model = {"plugin": f"{wide}:build"}
    with pytest.raises(plugin.PluginError, match=r"gave \(2, 3\); a regression model must give \(2,\)"):
        family_of("torch").build(FeatureSpec([3], 2, 1, "regression"), model)
    assert family_of("torch").build(FeatureSpec([3], 2, 3, "multiclass"), model) is not None
