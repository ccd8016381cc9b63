"""Training uses the newest tuned values of the searched params when ``tuning.apply`` is true, and records them."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlassets.core import paths
from mlassets.core.config import ConfigError, canonical_hash, parse_config
from mlassets.core.records import RecordFiles
from mlassets.core.train import launch
from mlassets.core.train.job import TrainJob
from mlassets.core.train.result import Environment
from mlassets.core.train.synthetic import tiny_config
from mlassets.core.tune.apply import effective_config, tuned_config
from mlassets.core.tune.record import TunedHparams

KEY = ("flights", "tuned_hparams")


def _config(apply: bool = True, params: tuple[str, ...] = ("lr", "dropout", "batch_size")):
    data = tiny_config()
    data["tuning"].update({"apply": apply, "params": list(params)})
    return parse_config(data)


def _tuned(dataset: str = "flights", **values: float) -> TunedHparams:
    values = values or {"lr": 0.0123, "dropout": 0.25, "batch_size": 1024.0, "weight_decay": 0.01}
    return TunedHparams(
        dataset=dataset, study_name="flights-0123456789ab", storage_kind="sqlite", storage="sqlite:///o.db",
        data_version="a" * 40, config_hash="h", params=list(values), values=values, metric="mae", best_value=5.0,
        best_trial=3, trials_complete=4, trials_pruned=2, trials_failed=0, trials_run=6, mlflow_run_id="r",
        seconds=1.0, created_at="2026-01-01T00:00:00+00:00")


def test_apply_puts_the_tuned_values_of_the_searched_params_into_their_sections() -> None:
    cfg = _config()
    out = effective_config(cfg, _tuned())
    assert (out.training.lr, out.model.dropout, out.training.batch_size) == (0.0123, 0.25, 1024)
    assert type(out.training.batch_size) is int  # the record keeps numbers as floats; the config wants an integer
    assert out.training.weight_decay == cfg.training.weight_decay  # tuned, but not searched by this config: pinned
    assert out.dataset == cfg.dataset and out.features == cfg.features and out.gate == cfg.gate
    assert out.config_hash() != cfg.config_hash()


def test_the_config_pins_its_values_when_apply_is_false_or_nothing_was_tuned() -> None:
    pinned = _config(apply=False)
    assert effective_config(pinned, _tuned()) is pinned
    cfg = _config()
    assert effective_config(cfg, None) is cfg
    assert effective_config(_config(params=("embedding_dim",)), _tuned()) == _config(params=("embedding_dim",))


def test_tuned_values_that_break_a_rule_or_another_dataset_fail_by_name() -> None:
    with pytest.raises(ConfigError, match=r"model\.dropout: must be in \[0, 1\), got 1\.5"):
        effective_config(_config(), _tuned(dropout=1.5))
    with pytest.raises(ConfigError, match=r"training\.batch_size: tuned value 300\.5 is not an integer"):
        effective_config(_config(), _tuned(batch_size=300.5))
    with pytest.raises(ValueError, match="dataset 'orders' cannot configure 'flights'"):
        effective_config(_config(), _tuned(dataset="orders"))


def test_training_reads_the_newest_record_only_when_it_applies_one(home: str) -> None:
    assert tuned_config(_config(), KEY) == _config()  # nothing tuned yet: the config's values
    files = RecordFiles(paths.records_root())
    files.write(KEY, None, _tuned(lr=0.001))
    files.write(KEY, None, _tuned(lr=0.02))  # a newer study
    assert tuned_config(_config(), KEY).training.lr == 0.02
    files.path(KEY, None).write_text("{broken")
    assert tuned_config(_config(apply=False), KEY) == _config(apply=False)  # pinned: the record is not even read


def test_the_effective_config_is_what_the_job_trains_with_and_the_record_names(tmp_path: Path, monkeypatch) -> None:
    """A rebuild takes the recorded config (checked against the record's config_hash): both are the tuned one."""
    def splits(store, cfg, version, directory, names):
        return {name: directory / f"{name}.parquet" for name in names}

    monkeypatch.setattr(launch, "export_splits", splits)
    cfg = effective_config(_config(), _tuned())
    job = TrainJob.from_json(launch.prepare_job(None, cfg, "a" * 40, tmp_path))  # type: ignore[arg-type]
    assert parse_config(job.config).training.lr == 0.0123 and job.config == cfg.to_dict()
    env = Environment(torch_version="t", cpu_capability="c", cpu_model="m", blas="b", threads=1, world_size=1)
    result = SimpleNamespace(data_version="a" * 40, seed=42, environment=env, weights_sha256="w", family="mlp",
                             model_code={})
    record = launch.provenance(cfg, result, "local", "run")  # type: ignore[arg-type]
    assert record.config_hash == canonical_hash(json.loads(json.dumps(job.config))) == cfg.config_hash()
    assert record.config_hash != _config().config_hash()
