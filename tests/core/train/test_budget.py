"""The run budget (issue 22, case 5): ``training.epochs: 1000000000`` stops after its first steps, naming the
expected cost (steps x measured step time); ``force_budget`` (``mlassets run --force``) trains anyway."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlassets.core.config import ConfigError, parse_config
from mlassets.core.train.job import TrainJob
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.torch_run.process import run_training
from tests.core.train import test_train
from tests.core.train.test_train import _config

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
data = test_train.data  # its training and validation frames, made once per module


def _job(data: tuple[Path, Path], out_dir: Path, force: bool = False, **training: object) -> TrainJob:
    config = _config()
    config["training"].update(training)
    job = TrainJob(config=parse_config(config).to_dict(), train_path=str(data[0]), validation_path=str(data[1]),
                   out_dir=str(out_dir), data_version="v-test")
    job.force_budget = force
    return job


def test_a_billion_epochs_stop_after_the_first_steps_naming_the_cost(data, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="training.epochs") as refused:  # it was at epoch 1453 after 4 minutes
        run_training(_job(data, tmp_path, epochs=1_000_000_000), PrintReporter())
    message = str(refused.value)
    assert message.startswith("training.epochs: 1000000000 epochs x 24 steps = 24000000000 steps; at ")
    assert re.search(r"ms per step \(measured on the first 5\) the run would take [\d.]+ (days|years), over ", message)
    assert "training.budget_hours 24 h. If you mean it, run it with `mlassets run --force`" in message
    from mlassets.core.train.outcome import read_outcome

    ended = read_outcome(tmp_path)  # what the training asset stops with (no failure, no retry)
    assert ended is not None and (ended.ended, ended.sentence) == ("refused", message)
    assert not (tmp_path / "result.json").exists()  # refused after the first steps, not at the run's end


def test_force_and_a_budget_of_zero_train_anyway(data, tmp_path: Path) -> None:
    from mlassets.core.train.outcome import REFUSED
    from mlassets.core.train.torch_run.run_budget import BudgetExceeded, duration

    tiny = {"epochs": 1, "budget_hours": 1e-9}  # any run is over this budget
    with pytest.raises(BudgetExceeded):
        run_training(_job(data, tmp_path / "refused", **tiny), PrintReporter())
    assert (tmp_path / "refused" / REFUSED).is_file()
    assert run_training(_job(data, tmp_path / "forced", force=True, **tiny), PrintReporter()).steps == 24
    assert run_training(_job(data, tmp_path / "none", epochs=1, budget_hours=0), PrintReporter()).steps == 24
    config = _config()
    config["training"]["budget_hours"] = -1
    with pytest.raises(ConfigError, match=r"training\.budget_hours: must be >= 0, got -1"):
        parse_config(config)
    assert (duration(90), duration(3 * 3600), duration(5 * 86400)) == ("90 s", "3 h", "5 days")
