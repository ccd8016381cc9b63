"""Count and distribution checks of new partitions against the rest of a version, with the config's bands."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import yaml

from mlassets.core.config import ConfigError, DatasetConfig, load_config, parse_config, shipped_configs
from mlassets.core.data.partition_checks import validate_row_change, validate_target_mean, validate_target_quantiles


@pytest.fixture(scope="module")
def ds() -> DatasetConfig:
    return load_config(shipped_configs()["flights"]).dataset


def _normal(mean: float, std: float, n: int = 4000, seed: int = 0) -> pd.Series:
    return pd.Series(np.random.default_rng(seed).normal(mean, std, n))


def test_row_change_within_and_outside_the_band(ds: DatasetConfig) -> None:
    assert ds.row_change_band == 0.3
    counts = {"2013-01": 1000, "2013-02": 1200, "2013-03": 1400}
    ok = validate_row_change(counts, ["2013-03"], ds)
    assert ok.passed and "partition 2013-03 within ±30% of the mean 1100 rows" == ok.message
    counts["2013-03"] = 500
    bad = validate_row_change(counts, ["2013-03"], ds)
    assert not bad.passed and bad.failures == 1
    assert bad.message == "partition 2013-03: 500 rows, -55% vs the mean 1100 rows of 2 other partitions (band ±30%)"


def test_row_change_names_every_bad_partition_and_skips_without_reference(ds: DatasetConfig) -> None:
    counts = {"a": 1000, "b": 2000, "c": 0}
    bad = validate_row_change(counts, ["b", "c"], ds)
    assert not bad.passed and bad.failures == 2
    assert "partition b: 2000 rows, +100%" in bad.message and "partition c: 0 rows, -100%" in bad.message
    assert validate_row_change({"a": 5}, ["a"], ds).passed  # the first partition has nothing to compare with
    assert validate_row_change(counts, [], ds).passed  # nothing new (a re-ingest of identical data)


def test_target_mean_in_reference_standard_deviations(ds: DatasetConfig) -> None:
    reference = _normal(5, 40)
    assert validate_target_mean(_normal(20, 40, seed=1), reference, ["2013-03"], ds).passed  # +0.37 std
    bad = validate_target_mean(_normal(50, 40, seed=1), reference, ["2013-03"], ds)
    assert not bad.passed
    assert bad.message.startswith("column 'arr_delay': mean 49.6 in partition 2013-03 vs 4.396"), bad.message
    assert "a shift of +1.1" in bad.message and "(band ±0.75)" in bad.message


def test_target_quartiles_in_reference_iqrs(ds: DatasetConfig) -> None:
    reference = _normal(0, 10)
    assert validate_target_quantiles(_normal(2, 10, seed=1), reference, ["x"], ds).passed
    wider = validate_target_quantiles(_normal(0, 30, seed=1), reference, ["x"], ds)  # same mean, 3x the spread
    assert not wider.passed and "q25" in wider.message and "q75" in wider.message and "median" not in wider.message
    assert validate_target_mean(_normal(0, 30, seed=1), reference, ["x"], ds).passed  # the mean misses it


def test_unusable_inputs_pass_and_leave_it_to_the_schema(ds: DatasetConfig) -> None:
    reference = _normal(0, 10)
    for check in (validate_target_mean, validate_target_quantiles):
        assert check(None, reference, ["x"], ds).passed
        assert check(pd.Series(["abc"]), reference, ["x"], ds).passed
        assert check(_normal(50, 10), pd.Series([1.0]), ["x"], ds).passed
        assert check(_normal(50, 10), reference, [], ds).passed
    constant = pd.Series([3.0] * 100)
    assert not validate_target_mean(pd.Series([9.0] * 10), constant, ["x"], ds).passed  # std 0: |mean| as scale


def test_binary_targets_skip_quartiles_and_compare_rates(ds: DatasetConfig) -> None:
    binary = dataclasses.replace(ds, task="binary", target="late", target_mean_band=0.5)
    reference = pd.Series(np.random.default_rng(0).random(5000) < 0.2).astype(int)
    doubled = pd.Series(np.random.default_rng(1).random(1000) < 0.4).astype(int)
    quartiles = validate_target_quantiles(doubled, reference, ["w"], binary)
    assert quartiles.passed and "binary" in quartiles.message
    mean = validate_target_mean(doubled, reference, ["w"], binary)
    assert not mean.passed and "column 'late'" in mean.message


@pytest.mark.parametrize("band", ["row_change_band", "target_mean_band", "target_quantile_band"])
def test_bands_must_be_positive(band: str) -> None:
    data = yaml.safe_load(shipped_configs()["flights"].read_text())
    data["dataset"][band] = 0
    with pytest.raises(ConfigError, match=rf"dataset\.{band}: must be > 0, got 0"):
        parse_config(data)


def test_class_labels_of_a_multiclass_target_have_no_mean_or_quartiles_to_check(ds: DatasetConfig) -> None:
    """Integer class codes whose shares move a lot would fail both bands as numbers; as labels they are skipped."""
    multi = dataclasses.replace(ds, task="multiclass")
    reference, new = pd.Series([0, 1, 2] * 300), pd.Series([2] * 900)
    assert not validate_target_mean(new, reference, ["2013-02"], ds).passed  # read as numbers, they shift
    for check in (validate_target_mean, validate_target_quantiles):
        outcome = check(new, reference, ["2013-02"], multi)
        assert outcome.passed and outcome.message.startswith("multiclass target: class labels have no")


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_a_classification_target_with_one_class_in_the_whole_version_is_refused(ds: DatasetConfig, task: str) -> None:
    """Issue 33 case 5: refused at validation, not by the training process 40 s later."""
    ds = dataclasses.replace(ds, target="late", task=task)
    one = validate_target_quantiles(pd.Series([0.0] * 50), pd.Series([0.0] * 80), ["2024-02"], ds)
    assert not one.passed
    assert one.message == (f"column 'late': every one of the version's 130 rows has the class 0: one class, and a "
                           f"{task} classifier needs at least two")
    first = validate_target_quantiles(pd.Series([1.0] * 50), None, ["2024-01"], ds)  # the first partition alone
    assert not first.passed and "50 rows has the class 1" in first.message
    both = validate_target_quantiles(pd.Series([0.0] * 50), pd.Series([0.0] * 79 + [1.0]), ["2024-02"], ds)
    assert both.passed  # one row of the other class anywhere in the version is enough
