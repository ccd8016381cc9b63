"""The hash split (no time column): stable per row across versions and key spellings, near its fractions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mlassets.core.config import PipelineConfig, load_config
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.store.local import LocalStore
from mlassets.core.features.split import hash_split, split_by_hash
from mlassets.core.features.store import read_split, write_features
from tests.fixtures import plugins


@pytest.fixture
def cfg(tmp_path: Path) -> PipelineConfig:
    """The plug-in visits source (weekly partitions), split by hash of (day, region), without a time column."""
    config = {
        "dataset": {"name": "visits", "source": "tests.fixtures.plugins:visits", "target": "visits",
                    "key": ["day", "region"], "slices": ["region"], "partitions": {"pattern": "YYYY-Www"},
                    "min_rows": 10, "row_change_band": 0.5,
                    "columns": {"day": {"dtype": "datetime"}, "region": {"dtype": "str"},
                                "ads": {"dtype": "float", "min": 0}, "visits": {"dtype": "float", "min": 0}}},
        "features": {"categorical": ["region"], "numeric": ["ads"], "split": "hash", "validation_fraction": 0.2,
                     "holdout_fraction": 0.2},
        "model": {"registered_name": "visits"},
        "training": {}, "gate": {},
    }
    path = tmp_path / "visits.yaml"
    path.write_text(yaml.safe_dump(config))
    return load_config(path)


def test_a_row_keeps_its_split_whatever_else_the_version_holds(cfg: PipelineConfig) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"day": pd.date_range("2024-01-01", periods=4000, freq="h", tz="UTC"),
                          "region": rng.choice(["north", "south"], 4000)})
    params = hash_split(cfg)
    alone = split_by_hash(frame.iloc[:100], params)
    among_more = split_by_hash(frame, params).iloc[:100]
    pd.testing.assert_series_equal(alone, among_more)
    shares = split_by_hash(frame, params).value_counts(normalize=True)
    assert shares["holdout"] == pytest.approx(0.2, abs=0.03) and shares["validation"] == pytest.approx(0.2, abs=0.03)
    other_seed = split_by_hash(frame, {**params, "seed": 1})
    assert (other_seed != split_by_hash(frame, params)).mean() > 0.2  # a seed is another assignment


def test_a_key_spelled_differently_hashes_the_same() -> None:
    params = {"key": ["id"], "seed": 0, "validation": 0.3, "holdout": 0.3}
    as_int = pd.DataFrame({"id": np.arange(500)})
    as_float = pd.DataFrame({"id": np.arange(500, dtype=float)})
    as_text = pd.DataFrame({"id": [str(i) for i in range(500)]})
    expected = split_by_hash(as_int, params)
    pd.testing.assert_series_equal(split_by_hash(as_float, params), expected)
    pd.testing.assert_series_equal(split_by_hash(as_text, params), expected)


def test_the_plug_in_source_through_the_store_and_the_hash_split(cfg: PipelineConfig, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path / "store")
    plugins.CALLS.clear()
    versions = [ingest_partition(store, cfg, week).data_version for week in ("2024-W01", "2024-W02")]
    assert plugins.CALLS == ["2024-W01", "2024-W02"]
    first = write_features(store, cfg, versions[0])
    second = write_features(store, cfg, versions[1])
    assert second.reused == ["2024-W01"] and sum(second.rows.values()) == 56
    holdout_then = read_split(store, cfg, versions[0], "holdout")
    holdout_now = read_split(store, cfg, versions[1], "holdout")
    merged = holdout_then.merge(holdout_now, on=["day", "region"], how="left", indicator=True)
    assert (merged["_merge"] == "both").all()  # a holdout row of the first version is a holdout row later too
    assert first.rows["holdout"] == len(holdout_then) > 0
    # a version in the store never needs the plug-in again (a rebuild reads the commit)
    monkeypatch.setattr(plugins, "visits", None)
    assert write_features(store, cfg, versions[1], reuse=False).rows == second.rows
