"""Champion and challenger across families, end to end on the embedded stack (real Dagster, MLflow and store):
an MLP champion of ``flights_arr_delay`` (the flights config), then a LightGBM candidate of the same registered
model (the flights_lightgbm config) on the next data version, gated against it on the candidate's holdout; it
becomes champion, and a rebuild of it from its record gives identical predictions."""

from __future__ import annotations

import dataclasses

import mlflow
import mlflow.lightgbm
import numpy as np
import pytest

from mlassets.cli import main
from mlassets.cli.demo import play
from mlassets.core import tracking
from mlassets.core.config import PipelineConfig, load_config, shipped_configs
from mlassets.core.data.store import open_store
from mlassets.core.features.store import read_split
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promotion import PromotionLog
from mlassets.core.registry.rebuild import rebuild
from mlassets.core.train.family import family_of
from mlassets.core.train.trees.common import matrix
from mlassets.host.instance import get_instance
from mlassets.host.runs import ingest
from tests.conftest import small_flights

pytestmark = pytest.mark.e2e


def _small_lightgbm(sample: float = 0.2) -> PipelineConfig:
    """flights_lightgbm on the same sample as ``small_flights`` (and its small-slice gate), with fewer rounds."""
    cfg = load_config(shipped_configs()["flights_lightgbm"])
    params = {**cfg.model.params, "rounds": 300, "early_stopping_rounds": 30}
    return dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, sample_fraction=sample),
                               model=dataclasses.replace(cfg.model, params=params),
                               gate=dataclasses.replace(cfg.gate, slice_min_rows=40))


def test_a_lightgbm_challenger_replaces_the_mlp_champion_and_rebuilds_identically(home, capsys) -> None:
    mlp, trees = small_flights(), _small_lightgbm()
    name = mlp.model.registered_name
    assert trees.model.registered_name == name
    instance = get_instance()
    january = ingest(instance, mlp, "2013-01")
    first = play(instance, mlp, "2013-01", january.key, january.data_version)
    assert first.decision == "pass" and first.champion_version == "1"
    ingest(instance, trees, "2013-01")
    february = ingest(instance, trees, "2013-02")  # the next version: January and February
    version = february.data_version
    second = play(instance, trees, "2013-02", february.key, version)
    with capsys.disabled():  # the two families side by side, in the test's output
        print(f"\nholdout MAE (last week of February, sample 0.2): MLP v1 {second.champion_metric:.3f}, "
              f"LightGBM v2 {second.candidate_metric:.3f}; gate {second.decision} {second.reasons}")
    assert second.success and second.decision == "pass", second.reasons
    assert second.champion_metric is not None  # judged against the MLP on the same holdout, not on thresholds
    assert second.champion_version == "2"
    live = PromotionLog().live(name)
    assert live is not None and (live.from_version, live.to_version) == ("1", "2")

    tracking.configure()
    records = {v: registry.record_of(registry.get_version(name, v)) for v in ("1", "2")}
    assert (records["1"].family, records["2"].family) == ("mlp", "lightgbm")
    assert (records["1"].dataset, records["2"].dataset) == ("flights", "flights_lightgbm")
    assert records["2"].environment.library.startswith("lightgbm ") and records["2"].environment.torch_version == ""
    assert records["1"].native_model_uri == ""

    # MLflow's own flavor, logged in the same run, gives the booster's raw scores
    bundle = registry.load_version_bundle(registry.get_version(name, "2"))
    holdout = read_split(open_store(), trees, version, "holdout")
    x_cat, x_num = bundle.preprocessor.transform(holdout)
    uri = records["2"].native_model_uri
    assert mlflow.get_logged_model(uri.removeprefix("models:/")).source_run_id == records["2"].mlflow_run_id
    native = mlflow.lightgbm.load_model(uri)
    np.testing.assert_array_equal(native.predict(matrix(x_cat, x_num), raw_score=True),
                                  family_of("lightgbm").predict(bundle.model, x_cat, x_num))
    served = mlflow.pyfunc.load_model(f"models:/{name}@champion").predict(holdout)
    np.testing.assert_array_equal(np.asarray(served), bundle.predict(holdout))

    capsys.readouterr()
    assert main(["history", "--model", name]) == 0
    history = capsys.readouterr().out.splitlines()
    assert history[0].split()[6] == "family" and [line.split()[6] for line in history[1:3]] == ["mlp", "lightgbm"]
    assert main(["versions", "--config", "flights_lightgbm"]) == 0  # the registered (small) config, by its name
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[-2:] == ["family", "champion"] and table[-1].split()[-3:] == ["v2", "lightgbm", "yes"]

    report = rebuild(name, "2")
    with capsys.disabled():
        print("\n".join(report.lines()))
    assert report.identical and report.weights_match and report.rows == len(holdout) > 0, report.lines()
