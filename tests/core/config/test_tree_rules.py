"""The boosted trees' config rules fail at load naming the key and value; the tuning default follows the family."""

from __future__ import annotations

import pytest
import yaml

from mlassets.core.config import ConfigError, load_config, parse_config, shipped_configs
from mlassets.core.config.families import TREE_TUNABLE


def _trees(family: str = "lightgbm", **model: object) -> dict:
    data = yaml.safe_load(shipped_configs()["flights"].read_text())
    data["model"] = {"registered_name": "m", "family": family, **model}
    return data


@pytest.mark.parametrize(("change", "message"), [
    ({"model": {"params": {"num_leaves": 1}}}, "model.params.num_leaves: must be in [2, 131072], got 1"),
    ({"model": {"params": {"num_leaves": 31.5}}}, "model.params.num_leaves: expected an integer, got 31.5"),
    ({"model": {"params": {"learning_rate": "fast"}}}, "model.params.learning_rate: expected a number, got 'fast'"),
    ({"model": {"params": {"learning_rate": 0}}}, "model.params.learning_rate: must be in [1e-06, 1], got 0"),
    ({"model": {"params": {"feature_fraction": 1.5}}}, "model.params.feature_fraction: must be in [0.001, 1], got 1.5"),
    ({"model": {"params": {"rounds": True}}}, "model.params.rounds: expected an integer, got True"),
    ({"model": {"params": {"num_leafs": 31}}}, "model.params.num_leafs: unknown for boosted trees (known: rounds"),
    ({"model": {"plugin": "pkg.mod:build"}}, "model.plugin: 'pkg.mod:build' is for family 'torch'; family "),
    ({"training": {"nproc": 2}}, "training.nproc: 2; boosted trees train in one process"),
    ({"training": {"checkpoint_every_minutes": 5}}, "training.checkpoint_every_minutes: 5; boosted trees checkpoint "
                                                    "every training.checkpoint_every_steps rounds"),
    ({"automation": {"retrain": "warm_start"}}, "automation.retrain: 'warm_start'; model.family 'lightgbm' trains "
                                                "from scratch"),
    ({"tuning": {"params": ["lr", "num_leaves"]}}, "tuning.params: 'lr' is not searched for model.family 'lightgbm' "
                                                   "(it searches num_leaves, learning_rate"),
])
@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_bad_tree_settings_fail_at_load_naming_key_and_value(family: str, change: dict, message: str) -> None:
    data = _trees(family)
    for section, values in change.items():
        data.setdefault(section, {}).update(values)
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert message.replace("'lightgbm'", repr(family)) in str(err.value)


def test_tuning_searches_what_the_family_has_unless_the_config_says() -> None:
    assert parse_config(_trees()).tuning.params == list(TREE_TUNABLE)
    assert parse_config(_trees("xgboost", params={"num_leaves": 63})).tuning.params == list(TREE_TUNABLE)
    mlp = load_config(shipped_configs()["flights"])
    assert mlp.tuning.params == ["lr", "weight_decay", "dropout"]  # as before: configs without the key keep it
    assert parse_config(mlp.to_dict()) == mlp  # the filled-in default loads back as it is
    chosen = {**_trees(), "tuning": {"params": ["learning_rate"]}}
    assert parse_config(chosen).tuning.params == ["learning_rate"]
    with pytest.raises(ConfigError, match="tuning.params: 'num_leaves' is not searched for model.family 'mlp'"):
        parse_config({**yaml.safe_load(shipped_configs()["flights"].read_text()),
                      "tuning": {"params": ["num_leaves"]}})


def test_flights_lightgbm_is_flights_with_trees_competing_for_the_same_model() -> None:
    """Its own dataset (an asset-key prefix of its own), the same rows, features and gate, the same registered
    model: a LightGBM candidate is gated against the MLP champion on the same kind of holdout."""
    mlp, trees = (load_config(shipped_configs()[n]).to_dict() for n in ("flights", "flights_lightgbm"))
    assert (mlp["dataset"].pop("name"), trees["dataset"].pop("name")) == ("flights", "flights_lightgbm")
    for section in ("dataset", "features", "gate"):
        assert trees[section] == mlp[section], section
    assert trees["model"]["registered_name"] == mlp["model"]["registered_name"]
    assert (mlp["model"]["family"], trees["model"]["family"]) == ("mlp", "lightgbm")
