"""The predictions file of a holdout scored chunk by chunk (``evaluate.predictions.write_scored``) against the same
holdout as one frame: the same rows in the same order, the same columns and dtypes, the same predictions and error,
on a real feature store's holdout (flights, regression) and a multiclass one; written row group by row group; an
empty holdout refused; memory that does not grow with the holdout."""

from __future__ import annotations

import dataclasses
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlassets.core.evaluate.predictions import prediction_rows, write_scored
from mlassets.core.features.store import read_split, split_tables
from mlassets.core.train.outputs import class_frame
from mlassets.core.train.splits import class_label
from tests.conftest import small_flights
from tests.core.evaluate.test_multiclass import CLASSES, mc_config, probabilities
from tests.core.evaluate.test_stream_eval import Data, _data
from tests.core.evaluate.test_stream_multiclass import chunks


@pytest.fixture(scope="module")
def flights(tmp_path_factory: pytest.TempPathFactory) -> Data:
    return _data(tmp_path_factory.mktemp("flights") / "store", small_flights(0.3), ("2013-01",))


def test_a_holdout_in_chunks_gives_the_file_of_one_frame(flights: Data, tmp_path: Path) -> None:
    cfg, bundle = flights.cfg, flights.bundle(0)
    whole = read_split(flights.store, cfg, flights.version, "holdout")  # what the predictions stage read before
    one = write_scored([whole], cfg, bundle.predict, "3", tmp_path / "one.parquet")
    tables = split_tables(flights.store, cfg, flights.version, "holdout", budget_mb=1)
    many = write_scored(tables, cfg, bundle.predict, "3", tmp_path / "many.parquet", score_rows=97)
    assert pq.ParquetFile(tmp_path / "many.parquet").num_row_groups == -(-len(whole) // 97) > 3  # incrementally
    got, want = pd.read_parquet(tmp_path / "many.parquet"), pd.read_parquet(tmp_path / "one.parquet")
    before = prediction_rows(whole, cfg, bundle.predict, "3")  # the frame the stage committed before
    for frame in (want, before):
        assert list(got.columns) == list(frame.columns) and (got.dtypes == frame.dtypes).all()
        keys = [*cfg.dataset.key, cfg.dataset.time_column, cfg.dataset.target, "model_version"]
        pd.testing.assert_frame_equal(got[keys], frame[keys], check_exact=True)  # the same rows, in order
        np.testing.assert_allclose(got["prediction"], frame["prediction"], rtol=1e-6)
    assert many.rows == one.rows == len(whole) > 0 and many.accuracy is None
    mae = float(np.mean(np.abs(before["prediction"] - before[cfg.dataset.target])))
    assert many.mae == pytest.approx(mae, rel=1e-9) and one.mae == pytest.approx(mae, rel=1e-9)


def test_a_multiclass_holdout_in_chunks_gives_the_labels_probabilities_and_accuracy(tmp_path: Path) -> None:
    cfg = mc_config()
    rng = np.random.default_rng(4)
    y = rng.choice(CLASSES, 1000).astype(object)
    probs = probabilities(y, CLASSES, 2.0, 5).add_prefix("p_")
    frame = pd.concat([pd.DataFrame({"island": rng.choice(["Biscoe", "Dream"], 1000), "species": y}), probs], axis=1)

    def predict(rows: pd.DataFrame) -> pd.DataFrame:
        return class_frame(CLASSES, rows[[f"p_{c}" for c in CLASSES]].to_numpy(dtype=np.float64))

    one = write_scored([frame], cfg, predict, "7", tmp_path / "one.parquet")
    many = write_scored(chunks(frame, (1, 333, 40, 250)), cfg, predict, "7", tmp_path / "many.parquet", score_rows=64)
    got, want = pd.read_parquet(tmp_path / "many.parquet"), pd.read_parquet(tmp_path / "one.parquet")
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert list(got.columns) == ["species", "prediction", *[f"probability_{c}" for c in CLASSES], "model_version"]
    hits = np.mean(want["prediction"].to_numpy() == frame["species"].map(class_label).to_numpy())
    assert many.rows == one.rows == 1000 and many.mae is None
    assert many.accuracy == pytest.approx(hits, rel=1e-12) and 0 < hits < 1


def test_a_holdout_of_no_chunk_is_refused_and_an_empty_frame_gives_the_columns(tmp_path: Path) -> None:
    cfg, model = small_flights(), SimpleNamespace(predict=lambda f: f["distance"].to_numpy() * 0.1)
    with pytest.raises(ValueError, match="predictions: the holdout of dataset 'flights' has no rows to score"):
        write_scored(iter([]), cfg, model.predict, "1", tmp_path / "none.parquet")
    empty = pd.DataFrame({"distance": pd.Series([], dtype="float64"), "arr_delay": pd.Series([], dtype="float64")})
    assert write_scored([empty], cfg, model.predict, "1", tmp_path / "empty.parquet").mae is None
    assert list(pd.read_parquet(tmp_path / "empty.parquet").columns) == ["arr_delay", "prediction", "model_version"]


def _peak_bytes(rows: int, tmp_path: Path, chunk: int = 4000) -> int:
    """tracemalloc's peak while scoring ``rows`` synthetic rows into a file, ``chunk`` rows read at a time."""
    cfg = small_flights()
    cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, key=["id"]))
    rng = np.random.default_rng(0)

    def tables():
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            yield pa.table({"id": np.arange(start, start + n), "distance": rng.normal(size=n),
                            "arr_delay": rng.normal(size=n)})

    tracemalloc.start()
    try:
        write_scored(tables(), cfg, lambda f: f["distance"].to_numpy() * 2.0, "1", tmp_path / f"{rows}.parquet",
                     score_rows=1000)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_holdout(tmp_path: Path) -> None:
    _peak_bytes(4000, tmp_path)  # first-call costs (imports, caches) out of the way
    # each size's best of two: a one-off allocation elsewhere in the process (a cache filled, a module's lazy
    # state) lands in one measurement, while a holdout held whole would be in both
    small = min(_peak_bytes(40_000, tmp_path), _peak_bytes(40_000, tmp_path))
    large = min(_peak_bytes(160_000, tmp_path), _peak_bytes(160_000, tmp_path))
    assert large < 1.25 * small, (small, large)  # four times the rows; a holdout held whole would be ~4x
