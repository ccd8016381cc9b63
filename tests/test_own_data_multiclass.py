"""A multiclass dataset through the real pipeline, for every model family: palmerpenguins' species (three classes,
shipped offline as a CSV by the package) from two study years to a champion, gated with multiclass metrics and
slices per island and per class, served as a label and one probability per class, and rebuilt identically."""

from __future__ import annotations

from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import yaml

from dashboard import data as dashboard
from mlassets.core import paths, tracking
from mlassets.core.data.version_keys import version_key
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.records import RecordFiles
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promote import live_version
from mlassets.serve import PredictionSet, load_champion
from tests.test_own_data import _package_file, cli

pytestmark = pytest.mark.e2e

PLUGIN = Path(__file__).resolve().parent / "fixtures" / "penguin_net.py"
FAMILIES = {  # the model section of each family: a new family joins with one line
    "mlp": {"hidden": [16]},
    "torch": {"family": "torch", "plugin": f"{PLUGIN}:build", "params": {"hidden": 16}},
    "lightgbm": {"family": "lightgbm", "params": {"rounds": 60, "min_child_samples": 5, "num_leaves": 8}},
    "xgboost": {"family": "xgboost", "params": {"rounds": 60, "min_child_samples": 2, "num_leaves": 8}},
}
CLASSES = ["Adelie", "Chinstrap", "Gentoo"]
MEASURES = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
NAME = "penguin_species"


def _config(directory: Path, family: str, name: str = NAME) -> Path:
    """Species from the island, sex and four measurements; study years are the partitions, split by key hash."""
    measure = {"dtype": "float", "nullable": True, "min": 0}
    config = {
        "dataset": {
            "name": NAME, "source": "files", "task": "multiclass", "target": "species",
            "path": str(_package_file("palmerpenguins", "data", "penguins.csv")),
            "partition_column": "year", "partitions": {"pattern": "YYYY", "keys": ["2007", "2008"]},
            "key": ["island", *MEASURES, "sex", "year"], "slices": ["island"], "min_rows": 80,
            "columns": {"species": {"dtype": "str", "allowed": CLASSES}, "island": {"dtype": "str"},
                        **{c: measure for c in MEASURES}, "sex": {"dtype": "str", "nullable": True},
                        "year": {"dtype": "int"}},
        },
        "features": {"split": "hash", "categorical": ["island", "sex"], "numeric": MEASURES,
                     "validation_fraction": 0.2, "holdout_fraction": 0.25},
        "model": {"registered_name": name, **FAMILIES[family]},
        "training": {"epochs": 30, "batch_size": 16, "lr": 0.01},
        "gate": {"main_metric": "logloss", "tolerance": 0.5, "slice_min_rows": 10, "slice_max_regression": 1.0,
                 "absolute_max_metric": 0.9, "calibration_max_ece": 0.3},
    }
    path = directory / f"{NAME}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _evaluations() -> dict[str, Evaluation]:
    files = RecordFiles(paths.records_root())
    folder = files.root / NAME / "evaluation"
    found = [files.read([NAME, "evaluation"], p.stem, Evaluation) for p in folder.glob("*.json")]
    return {e.data_version: e for e in found}  # by data commit (the records are kept by partition key)


def _check_version(name: str, version: str, family: str, against: str) -> Evaluation:
    record = registry.record_of(registry.get_version(name, version))
    assert record.family == family and record.gate_result.passed and record.gate_result.gated_against == against
    rules = {r.name: r for r in registry.gate_result_of(record).rules}  # the whole result: its training run's
    compared = {"main_metric", "slice island=Biscoe", "slice species=Gentoo"}  # against a champion; else absolute
    assert {"sanity_sum", "calibration_ece", *(compared if against != "none" else ["absolute_main_metric"])} <= \
        set(rules), sorted(rules)
    assert rules["sanity_sum"].passed and all(r.bound == "max" for n, r in rules.items() if n in compared)
    evaluation = _evaluations()[record.data_commit]
    assert evaluation.task == "multiclass" and evaluation.candidate["accuracy"] > 0.8
    assert evaluation.candidate["unseen_class_rows"] == 0
    assert [c.value for c in evaluation.classes] == CLASSES and all(c.candidate_knows for c in evaluation.classes)
    assert {r.slice for r in evaluation.slices} == {"island", "species"}
    if against != "none":
        assert all(np.isfinite([r.change, r.ci_low, r.ci_high]).all() for r in evaluation.slices)  # paired intervals
    return evaluation


def _served(name: str) -> None:
    rows = pd.read_csv(_package_file("palmerpenguins", "data", "penguins.csv")).head(40)
    served = load_champion(name).predict(rows)
    assert list(served.columns) == ["prediction", *(f"probability_{c}" for c in CLASSES)]
    np.testing.assert_allclose(served.iloc[:, 1:].sum(axis=1), 1.0, atol=1e-9)
    assert (served["prediction"] == rows["species"]).mean() > 0.8
    pyfunc = mlflow.pyfunc.load_model(f"models:/{name}@champion").predict(rows[["island", "sex", *MEASURES]])
    pd.testing.assert_frame_equal(pyfunc.reset_index(drop=True), served)


def test_penguin_species_through_every_family_to_a_champion_served_with_probabilities_and_rebuilt(home, tmp_path,
                                                                                                  capsys):
    """2007 trains the MLP (v1, champion on the absolute thresholds); on the 2007+2008 version the torch plug-in is
    gated against it and replaces it. The boosted trees each reach a champion of a model of their own on that
    version. The plug-in network and a booster are rebuilt from their records alone."""
    config = str(_config(tmp_path, "mlp"))
    assert cli(capsys, "ingest", "--config", config, "--partition", "2007")[0] == 0
    code, out, err = cli(capsys, "run", "--config", config)
    assert code == 0 and "candidate log loss" in out, out + err
    assert cli(capsys, "ingest", "--config", config, "--partition", "2008")[0] == 0
    code, out, err = cli(capsys, "run", "--config", str(_config(tmp_path, "torch")))
    assert code == 0, out + err
    tracking.configure()
    assert live_version(NAME) == "2"
    evaluation = _check_version(NAME, "2", "torch", against="1")
    assert evaluation.champion_version == "1"
    assert dashboard.evaluation(NAME, 2).to_json() == evaluation.to_json()  # the record the run logged to MLflow
    commit = registry.record_of(registry.get_version(NAME, "2")).data_commit
    key = version_key(["2008"], commit)  # records are kept by the version's partition key
    handed = RecordFiles(paths.records_root()).read([NAME, "predictions"], key, PredictionSet)
    assert handed.mae is None and 0.8 < handed.accuracy <= 1  # the champion's batch predictions, scored
    _served(NAME)

    for family in ("lightgbm", "xgboost"):
        name = f"{NAME}_{family}"
        code, out, err = cli(capsys, "run", "--config", str(_config(tmp_path, family, name)), "--version", "latest")
        assert code == 0, out + err
        assert live_version(name) == "1", out
        _check_version(name, "1", family, against="none")
        _served(name)

    for name, version in ((NAME, "2"), (f"{NAME}_xgboost", "1")):  # a plug-in network and a booster
        code, out, err = cli(capsys, "rebuild", name, "--version", version)
        assert code == 0 and "identical predictions" in out, out + err
