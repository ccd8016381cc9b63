"""An Optuna study over the training loop: prunes, picks its best on validation, never reads the holdout, resumes
from its storage, and logs every trial as an MLflow run nested under the study's run."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from mlflow import MlflowClient

from mlassets.core.config import parse_config
from mlassets.core.features import store as feature_store
from mlassets.core.train.synthetic import flights_like, tiny_config
from mlassets.core.tune import study as tune
from mlassets.core.tune.record import TunedHparams
from mlassets.core.tune.space import Param

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")

EPOCHS = 3
SPACE = {"lr": Param("training", 1e-6, 3e-2, log=True)}  # below ~1e-4 a trial learns nothing in 3 epochs: pruned


@dataclasses.dataclass
class Studies:
    first: TunedHparams
    second: TunedHparams  # the same study, resumed
    read: list[str]  # every split the two studies asked the feature store for
    tracking_uri: str


def _config(**tuning: object):
    data = tiny_config(epochs=EPOCHS, batch_size=256)
    data["tuning"].update({"params": ["lr"], "trials": 8, "seed": 0, **tuning})
    return parse_config(data)


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studies]:
    home = tmp_path_factory.mktemp("tune-home")
    read: list[str] = []
    frames = {"train": flights_like(1500, 0), "validation": flights_like(400, 1)}

    def split_tables(store: object, cfg: object, data_version: str, split: str) -> Iterator[pa.Table]:
        read.append(split)
        if split not in frames:
            raise AssertionError(f"the study read the {split!r} split")
        yield pa.Table.from_pandas(frames[split], preserve_index=False)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLASSETS_HOME", str(home))
        for var in ("MLFLOW_TRACKING_URI", "MLASSETS_OPTUNA_STORAGE", "MLASSETS_PROFILE"):
            mp.delenv(var, raising=False)
        mp.setattr(feature_store, "split_tables", split_tables)  # what export_splits reads each split with
        cfg = _config()
        first = tune.tune_version(None, cfg, "v1", home / "w1", space=SPACE)  # type: ignore[arg-type]
        second = tune.tune_version(None, cfg, "v1", home / "w2", trials=3, space=SPACE)  # type: ignore[arg-type]
    yield Studies(first, second, read, f"sqlite:///{home / 'mlflow.db'}")


def test_a_small_study_prunes_and_picks_its_best_on_validation(studies: Studies) -> None:
    tuned = studies.first
    print(f"study of 8 trials: {tuned.trials_complete} complete, {tuned.trials_pruned} pruned, {tuned.seconds} s")
    complete = [t for t in tuned.trials if t.state == "COMPLETE"]
    pruned = [t for t in tuned.trials if t.state == "PRUNED"]
    assert pruned and len(complete) >= 2
    assert (tuned.trials_pruned, tuned.trials_complete, tuned.trials_run) == (len(pruned), len(complete), 8)
    assert all(t.epochs < EPOCHS and t.value is None for t in pruned)  # stopped early, and never a candidate
    assert all(t.epochs == EPOCHS for t in complete)
    best = min(complete, key=lambda t: t.value)
    assert (tuned.best_value, tuned.best_trial, tuned.values) == (best.value, best.number, best.values)
    assert tuned.metric == "mae" and tuned.params == ["lr"] and tuned.data_version == "v1"
    assert max(t.last for t in pruned) > best.value  # the pruned trials were clearly worse at their last epoch


def test_the_study_reads_train_and_validation_never_the_holdout(studies: Studies) -> None:
    assert studies.read == ["train", "validation"] * 2


def test_a_second_call_resumes_the_study_from_its_storage(studies: Studies, tmp_path: Path) -> None:
    first, second = studies.first, studies.second
    assert second.study_name == first.study_name and second.storage == first.storage
    assert second.storage_kind == "sqlite" and second.storage.endswith("/optuna.db")  # $MLASSETS_HOME by default
    assert [t.number for t in second.trials] == list(range(11)) and second.trials_run == 3
    assert second.trials[:8] == first.trials  # the first call's trials, as they were
    assert second.trials[8:] != first.trials[:3]  # new draws, not the first call's again


def test_every_trial_is_an_mlflow_run_nested_under_the_study_run(studies: Studies) -> None:
    client = MlflowClient(studies.tracking_uri)
    for tuned in (studies.first, studies.second):
        parent = client.get_run(tuned.mlflow_run_id)
        assert parent.data.tags["optuna_study"] == tuned.study_name
        assert parent.data.metrics["trials_pruned"] == tuned.trials_pruned
        children = client.search_runs([parent.info.experiment_id],
                                      filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
        assert len(children) == tuned.trials_run
        rows = {t.number: t for t in tuned.trials}
        for run in children:
            row = rows[int(run.data.tags["optuna_trial"])]
            assert run.data.tags["optuna_state"] == row.state and run.info.status == "FINISHED"
            assert float(run.data.params["lr"]) == pytest.approx(row.values["lr"])
            curve = [m.value for m in sorted(client.get_metric_history(run.info.run_id, "val_mae"),
                                             key=lambda m: m.step)]
            assert len(curve) == row.epochs and curve[-1] == row.last  # one validation value per epoch
            if row.state == "COMPLETE":
                assert row.value == min(curve) == run.data.metrics["best_val_mae"]


def test_study_names_change_with_what_trials_train_on_not_with_how_many() -> None:
    cfg = _config()
    name = tune.study_name(cfg, "v1")
    assert name.startswith("flights-") and len(name) == len("flights-") + 12
    same = [_config(trials=30, seed=3, schedule="0 1 * * *"),
            dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, lr=0.5))]  # lr is searched
    assert {tune.study_name(c, "v1") for c in same} == {name}
    other = [_config(epochs=1), _config(params=["lr", "dropout"]),
             dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, hidden=[8]))]
    assert len({name, tune.study_name(cfg, "v2"), *(tune.study_name(c, "v1") for c in other)}) == 5


def test_storage_is_the_config_then_the_variable_then_sqlite_in_the_home(home: str, monkeypatch) -> None:
    assert tune.storage_url(_config()) == f"sqlite:///{Path(home).resolve() / 'optuna.db'}"
    monkeypatch.setenv("MLASSETS_OPTUNA_STORAGE", "postgresql://tuner:s3cret@db:5432/optuna")
    assert tune.storage_url(_config()) == "postgresql://tuner:s3cret@db:5432/optuna"
    assert tune.storage_url(_config(storage="mysql+pymysql://u@h/o")) == "mysql+pymysql://u@h/o"
    assert [tune.storage_kind(u) for u in ("postgresql+psycopg2://u:p@h/d", "sqlite:///x.db")] == ["postgresql",
                                                                                                    "sqlite"]
