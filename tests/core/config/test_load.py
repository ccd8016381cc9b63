"""Every shipped config loads; bad configs fail with the key (and value) named."""

from __future__ import annotations

import pytest
import yaml

from mlassets.core.config import ConfigError, PipelineConfig, load_config, parse_config, shipped_configs


def _flights_dict() -> dict:
    return yaml.safe_load(shipped_configs()["flights"].read_text())


@pytest.mark.parametrize("name", sorted(shipped_configs()))
def test_every_shipped_config_loads(name):
    cfg = load_config(shipped_configs()[name])
    assert isinstance(cfg, PipelineConfig)
    assert cfg.dataset.name
    assert cfg.dataset.target not in cfg.features.categorical + cfg.features.numeric


def test_flights_config_leaks_nothing_known_only_after_departure():
    cfg = load_config(shipped_configs()["flights"])
    features = set(cfg.features.categorical + cfg.features.numeric)
    assert not features & {"dep_delay", "dep_time", "arr_time", "air_time"}
    assert cfg.dataset.slices == ["origin", "carrier"]
    assert cfg.gate.main_metric == "mae"


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("training", "epochs", "four", "training.epochs: expected an integer, got 'four'"),
        ("training", "lr", [1], "training.lr: expected a number, got [1]"),
        ("training", "loss", "hinge", "training.loss: 'hinge' is not one of"),
        ("gate", "promotion", "yolo", "gate.promotion: 'yolo' is not one of"),
        ("model", "hidden", [64, "x"], "model.hidden[1]: expected an integer, got 'x'"),
        ("training", "epochs", 0, "training.epochs: must be >= 1, got 0"),
        ("dataset", "sample_fraction", 1.5, "dataset.sample_fraction: must be in (0, 1]"),
        ("training", "epochs", True, "training.epochs: expected an integer, got True"),
    ],
)
def test_wrong_value_names_the_key_and_value(section, key, value, expected):
    data = _flights_dict()
    data[section][key] = value
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert expected in str(err.value)


def test_unknown_key_is_named():
    data = _flights_dict()
    data["training"]["epocs"] = 3
    with pytest.raises(ConfigError, match=r"training\.epocs: unknown key"):
        parse_config(data)


def test_unknown_column_attribute_is_named():
    data = _flights_dict()
    data["dataset"]["columns"]["carrier"]["nulable"] = True
    with pytest.raises(ConfigError, match=r"dataset\.columns\.carrier\.nulable: unknown key"):
        parse_config(data)


def test_missing_required_key_is_named():
    data = _flights_dict()
    del data["dataset"]["target"]
    with pytest.raises(ConfigError, match=r"dataset\.target: required key is missing"):
        parse_config(data)


def test_target_as_feature_is_refused():
    data = _flights_dict()
    data["features"]["numeric"].append("arr_delay")
    with pytest.raises(ConfigError, match=r"features\.numeric: the target 'arr_delay' cannot be a feature"):
        parse_config(data)


def test_bad_timezone_is_named():
    data = _flights_dict()
    data["features"]["timezone"] = "Mars/Olympus"
    with pytest.raises(ConfigError, match=r"features\.timezone: 'Mars/Olympus'"):
        parse_config(data)


def test_file_errors_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset: [unclosed")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_config(bad)
    bad.write_text("- just a list")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(bad)


def test_config_hash_is_stable_and_sensitive():
    a, b = load_config(shipped_configs()["flights"]), load_config(shipped_configs()["flights"])
    assert a.config_hash() == b.config_hash()
    data = _flights_dict()
    data["training"]["seed"] = 7
    assert parse_config(data).config_hash() != a.config_hash()


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("training", "lr", 0, "training.lr"),
        ("model", "dropout", 1.0, "model.dropout: must be in [0, 1), got 1.0"),
        ("model", "hidden", [0], "model.hidden[0]: must be >= 1, got 0"),
        ("training", "nproc", 0, "training.nproc: must be >= 1, got 0"),
    ],
)
def test_out_of_range_values_are_refused(section, key, value, expected):
    data = _flights_dict()
    data[section][key] = value
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert expected in str(err.value)


def test_a_missing_or_broken_plugin_is_refused_when_the_config_loads(tmp_path):
    """Issue 33 case 5: not 40-80 s into a run. Checked without running the plug-in (nor importing torch)."""
    good = tmp_path / "good.py"
    good.write_text("import torch\n\n\ndef build(spec):\n    return torch.nn.Linear(1, 1)\n")
    (tmp_path / "syntax.py").write_text("def build(spec)\n    return None\n")
    (tmp_path / "imports.py").write_text("import no_such_lib_33\n\n\ndef build(spec):\n    return None\n")
    cases = {
        "missing.py:build": f"missing.py:build': the file {str(tmp_path / 'missing.py')!r} does not exist",
        "good.py:absent": "defines no function 'absent'",
        "syntax.py:build": "cannot be imported: " + str(tmp_path / "syntax.py") + ", line 1: expected ':'",
        "imports.py:build": "line 1 imports 'no_such_lib_33', which is not installed",
        "no_such_package_33.model:build": "module 'no_such_package_33.model' cannot be found",
    }
    data = _flights_dict()
    data["model"] = {"registered_name": "mine", "family": "torch", "plugin": "good.py:build"}
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump(data))
    assert load_config(config).model.plugin == f"{good}:build"
    for spec, message in cases.items():
        data["model"]["plugin"] = spec
        config.write_text(yaml.safe_dump(data))
        with pytest.raises(ConfigError) as err:
            load_config(config)
        assert message in str(err.value), spec
