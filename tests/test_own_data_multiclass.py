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

from mlassets.core import paths, tracking
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.records import RecordFiles
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promote import live_version
from mlassets.serving import load_champion
from tests.test_own_data import _package_file, cli

pytestmark = pytest.mark.e2e

PLUGIN = Path(__file__).resolve().parent / "fixtures" / "penguin_net.py"
FAMILIES = {  # model section per family: a new family joins with one line
    "mlp": {"hidden": [16]},
    "torch": {"family": "torch", "plugin": f"{PLUGIN}:build", "params": {"hidden": 16}},
}
CLASSES = ["Adelie", "Chinstrap", "Gentoo"]
FEATURES = ["island", "sex", "bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]


def _config(directory: Path, family: str) -> Path:
    measure = {"dtype": "float", "nullable": True, "min": 0}
    config = {
        "dataset": {
            "name": "penguin_species", "source": "files", "task": "multiclass",
            "path": str(_package_file("palmerpenguins", "data", "penguins.csv")),
            "partition_column": "year", "partitions": {"pattern": "YYYY", "keys": ["2007", "2008"]},
            "target": "species", "key": ["island", *FEATURES[2:], "sex", "year"], "slices": ["island"],
            "min_rows": 80, "columns": {
                "species": {"dtype": "str", "allowed": CLASSES}, "island": {"dtype": "str"},
                **{c: measure for c in FEATURES[2:]}, "sex": {"dtype": "str", "nullable": True},
                "year": {"dtype": "int"},
            },
        },
        "features": {"split": "hash", "categorical": ["island", "sex"], "numeric": FEATURES[2:],
                     "validation_fraction": 0.2, "holdout_fraction": 0.25},
        "model": {"registered_name": "penguin_species", **FAMILIES[family]},
        "training": {"epochs": 30, "batch_size": 16, "lr": 0.01},
        "gate": {"main_metric": "logloss", "tolerance": 0.5, "slice_min_rows": 10, "slice_max_regression": 1.0,
                 "absolute_max_metric": 0.9, "calibration_max_ece": 0.3},
    }
    path = directory / "penguin_species.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.parametrize("family", list(FAMILIES))
def test_penguin_species_reaches_a_champion_served_with_probabilities_and_rebuilt(family, home, tmp_path, capsys):
    config = str(_config(tmp_path, family))
    code, out, err = cli(capsys, "demo", "--config", config, "--months", "2")
    assert code == 0, out + err
    assert "candidate log loss" in out
    tracking.configure()
    champion = live_version("penguin_species")
    assert champion in ("1", "2"), out
    record = registry.record_of(registry.get_version("penguin_species", champion))
    assert record.gate_result.passed and record.family == family

    evaluations = {p.stem: RecordFiles(paths.records_root()).read(["penguin_species", "evaluation"], p.stem)
                   for p in (Path(paths.records_root()) / "penguin_species" / "evaluation").glob("*.json")}
    assert len(evaluations) == 2
    second = next(e for e in evaluations.values() if isinstance(e, Evaluation) and e.champion is not None)
    print(f"\n{family}: " + "; ".join(f"{m} candidate {second.candidate[m]:.4f} champion {second.champion[m]:.4f}"
                                      for m in ("logloss", "accuracy", "macro_f1", "ece")))
    assert second.task == "multiclass" and second.candidate["accuracy"] > 0.8
    assert [c.value for c in second.classes] == CLASSES and all(c.candidate_knows for c in second.classes)
    assert {r.slice for r in second.slices} == {"island", "species"}
    gate = record.gate_result if champion == "2" else None
    names = {r.name for r in (gate.rules if gate else [])}
    assert gate is None or {"sanity_sum", "calibration_ece", "slice species=Gentoo"} <= names

    rows = pd.read_csv(_package_file("palmerpenguins", "data", "penguins.csv")).head(40)
    served = load_champion("penguin_species").predict(rows)
    assert list(served.columns) == ["prediction", *(f"probability_{c}" for c in CLASSES)]
    np.testing.assert_allclose(served.iloc[:, 1:].sum(axis=1), 1.0, atol=1e-9)
    pyfunc = mlflow.pyfunc.load_model("models:/penguin_species@champion").predict(rows[FEATURES])
    pd.testing.assert_frame_equal(pyfunc.reset_index(drop=True), served)
    assert (served["prediction"] == rows["species"]).mean() > 0.8

    code, out, err = cli(capsys, "rebuild", "penguin_species", "--version", champion)
    assert code == 0, out + err
    assert "identical predictions" in out
