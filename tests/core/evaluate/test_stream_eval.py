"""The streamed evaluation in chunks against the whole holdout scored at once and evaluated as one chunk (its
baseline derived from the holdout's target) on real holdouts (flights: regression; orders_late: binary): the same
record to float rounding, the same intervals, the same gate verdicts; chunk size changes nothing; the
predictions file written chunk by chunk holds the scored rows; the accumulators do not grow with the rows."""

from __future__ import annotations

import dataclasses
import math
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

from mlassets.core.config import PipelineConfig, load_config, shipped_configs
from mlassets.core.data import budget
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.raw import partition_tables
from mlassets.core.data.store.local import LocalStore
from mlassets.core.evaluate import stream
from mlassets.core.evaluate.derived import derive
from mlassets.core.evaluate.gate import evaluate_gate
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.evaluate.score import score_holdout
from mlassets.core.evaluate.scored import evaluation_of
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.features.store import read_split, split_column, split_tables, write_features
from mlassets.core.train.artifact import ModelBundle
from mlassets.core.train.torch_run.mlp import build_model
from tests.conftest import small_flights


@dataclasses.dataclass
class Data:
    cfg: PipelineConfig
    store: LocalStore
    version: str
    train: pd.DataFrame

    @property
    def train_y(self) -> np.ndarray:
        return split_column(self.store, self.cfg, self.version, "train", self.cfg.dataset.target)

    def holdout(self) -> pa.Table:
        return pa.concat_tables(split_tables(self.store, self.cfg, self.version, "holdout"))

    def bundle(self, seed: int) -> ModelBundle:
        torch.manual_seed(seed)
        feats, y = self.cfg.features, self.train[self.cfg.dataset.target].to_numpy(dtype=np.float64)
        pre = Preprocessor.fit(self.train, feats.categorical, feats.numeric)
        config = {"embedding_dim": 4, "hidden": [16]}
        task = self.cfg.dataset.task
        return ModelBundle(model=build_model(config, pre.cardinalities, len(pre.numeric)), preprocessor=pre,
                           model_config=config, target=self.cfg.dataset.target, task=task,
                           target_center=float(np.median(y)) if task == "regression" else 0.0,
                           target_scale=float(np.std(y)) / 4 if task == "regression" else 1.0)


class Shifted:
    """A bundle whose predictions on one slice value are moved by ``shift`` (a candidate worse there)."""

    def __init__(self, inner: ModelBundle, column: str, value: str, shift: float) -> None:
        self.inner, self.column, self.value, self.shift = inner, column, value, shift
        self.preprocessor = inner.preprocessor

    def predict(self, frame: pd.DataFrame, factorized: Any = None) -> np.ndarray:
        pred = self.inner.predict(frame, factorized=factorized)
        return np.clip(pred + self.shift * (frame[self.column] == self.value).to_numpy(), 0.0, 1.0) if (
            self.inner.task == "binary") else pred + self.shift * (frame[self.column] == self.value).to_numpy()


def _data(root: Path, cfg: PipelineConfig, partitions: tuple[str, ...]) -> Data:
    store = LocalStore(root)
    for partition in partitions:
        head = ingest_partition(store, cfg, partition, partition_tables(cfg, partition)).data_version
    write_features(store, cfg, head)
    return Data(cfg, store, head, read_split(store, cfg, head, "train"))


@pytest.fixture(scope="module")
def flights(tmp_path_factory: pytest.TempPathFactory) -> Data:
    return _data(tmp_path_factory.mktemp("flights") / "store", small_flights(1.0), ("2013-01",))


@pytest.fixture(scope="module")
def late(tmp_path_factory: pytest.TempPathFactory) -> Data:
    cfg = load_config(shipped_configs()["orders_late"])
    return _data(tmp_path_factory.mktemp("late") / "store", cfg, ("2024-W01", "2024-W02", "2024-W03"))


def in_memory(data: Data, candidate, champion) -> tuple[Evaluation, pd.DataFrame]:
    """The holdout scored in one frame, evaluated as one chunk, its baseline derived from its target at once."""
    predictions = score_holdout(read_split(data.store, data.cfg, data.version, "holdout"), data.cfg, candidate,
                                champion)
    derived = derive(data.cfg, data.train_y, predictions["y"].to_numpy(), has_champion=champion is not None)
    return evaluation_of(predictions, data.cfg, derived=derived), predictions


def streamed(data: Data, candidate, champion, chunk: int, path: Path | None = None) -> Evaluation:
    whole = data.holdout()
    tables = (whole.slice(start, chunk) for start in range(0, whole.num_rows, chunk))
    train = stream.read_train_target(data.store, data.cfg, data.version)  # as the asset reads it: never whole
    return stream.evaluate_streamed(tables, data.cfg, candidate, champion, train, predictions_path=path)


def assert_same_record(got: Evaluation, want: Evaluation) -> None:
    """Equal to float rounding: sums add up in another order, and a network's float32 output may differ in the
    last bits with the batch it is given."""
    close, ci_abs = {"rel": 1e-7, "abs": 1e-9}, 1e-7
    assert got.holdout_rows == want.holdout_rows and got.task == want.task
    assert got.candidate == pytest.approx(want.candidate, **close)
    assert (got.champion is None) == (want.champion is None)
    if want.champion is not None:
        assert got.champion == pytest.approx(want.champion, **close)
    assert [(r.slice, r.value, r.n) for r in got.slices] == [(r.slice, r.value, r.n) for r in want.slices]
    for mine, theirs in zip(got.slices, want.slices, strict=True):
        assert mine.candidate == pytest.approx(theirs.candidate, **close)
        assert mine.champion == (None if theirs.champion is None else pytest.approx(theirs.champion, **close))
        assert mine.change == pytest.approx(theirs.change, nan_ok=True, **close)
        assert mine.ci_low == pytest.approx(theirs.ci_low, abs=ci_abs, nan_ok=True)
        assert mine.ci_high == pytest.approx(theirs.ci_high, abs=ci_abs, nan_ok=True)
    assert dataclasses.replace(got.predictions, seen_min=0.0, seen_max=0.0) == dataclasses.replace(
        want.predictions, seen_min=0.0, seen_max=0.0)
    assert got.predictions.seen_min == pytest.approx(want.predictions.seen_min)
    assert got.predictions.seen_max == pytest.approx(want.predictions.seen_max)
    assert (got.baseline is None) == (want.baseline is None)
    if want.baseline is not None:
        assert got.baseline == pytest.approx(want.baseline, **close)
    assert got.derived == want.derived
    assert (got.calibration is None) == (want.calibration is None)
    for model, report in (want.calibration or {}).items():
        assert got.calibration[model]["ece"] == pytest.approx(report["ece"], **close)
        assert [row["count"] for row in got.calibration[model]["table"]] == [row["count"] for row in report["table"]]


def same_verdict(data: Data, got: Evaluation, want: Evaluation) -> list[str]:
    mine, theirs = evaluate_gate(data.cfg.gate, got), evaluate_gate(data.cfg.gate, want)
    assert mine.passed == theirs.passed
    assert [r.name for r in mine.failures()] == [r.name for r in theirs.failures()]
    assert [(r.name, r.passed) for r in mine.rules] == [(r.name, r.passed) for r in theirs.rules]
    return [r.name for r in theirs.failures()]


@pytest.mark.parametrize("which", ["flights", "late"])
def test_streamed_record_and_verdict_equal_the_in_memory_ones(which, request) -> None:
    data = request.getfixturevalue(which)
    candidate, champion = data.bundle(1), data.bundle(2)
    want, _ = in_memory(data, candidate, champion)
    got = streamed(data, candidate, champion, chunk=1000)
    assert got.holdout_rows > 3000 and len(got.slices) >= 6
    assert_same_record(got, want)
    assert any(math.isfinite(r.ci_low) and r.ci_low < r.ci_high for r in got.slices)
    same_verdict(data, got, want)


@pytest.mark.parametrize("which, column, value, shift", [("flights", "origin", "JFK", 45.0),
                                                         ("late", "city", "paris", 0.4)])
def test_a_candidate_worse_on_one_slice_fails_that_slice_either_way(which, column, value, shift, request) -> None:
    data = request.getfixturevalue(which)
    champion = data.bundle(2)
    candidate = Shifted(champion, column, value, shift)
    want, _ = in_memory(data, candidate, champion)
    got = streamed(data, candidate, champion, chunk=700)
    assert_same_record(got, want)
    failing = same_verdict(data, got, want)
    assert f"slice {column}={value}" in failing
    row = next(r for r in got.slices if (r.slice, r.value) == (column, value))
    assert row.ci_low > 0  # the interval lies on the worse side


def test_a_first_model_gets_the_same_baseline_and_verdict(flights) -> None:
    """With the thresholds left to ``derive``: the sanity range and the naive baseline (accumulated when streamed)."""
    gate = dataclasses.replace(flights.cfg.gate, absolute_max_metric=None, prediction_min=None, prediction_max=None)
    flights = dataclasses.replace(flights, cfg=dataclasses.replace(flights.cfg, gate=gate))
    candidate = flights.bundle(1)
    want, _ = in_memory(flights, candidate, None)
    got = streamed(flights, candidate, None, chunk=1000)
    assert got.champion is None and got.baseline is not None and len(got.derived) == 2
    assert_same_record(got, want)
    assert "baseline_main_metric" in [r.name for r in evaluate_gate(flights.cfg.gate, got).rules]
    same_verdict(flights, got, want)


def test_chunk_size_does_not_change_the_result(flights) -> None:
    candidate, champion = Shifted(flights.bundle(2), "carrier", "UA", 10.0), flights.bundle(2)
    small, whole = (streamed(flights, candidate, champion, chunk=n) for n in (1000, 7000))
    assert whole.holdout_rows < 7000  # one chunk
    assert_same_record(small, whole)


def test_the_asset_batches_and_the_predictions_file(flights, monkeypatch, tmp_path) -> None:
    """Through ``split_tables`` in batches of a small budget; the file holds every scored row in order."""
    candidate, champion = flights.bundle(1), flights.bundle(2)
    want, predictions = in_memory(flights, candidate, champion)
    monkeypatch.setattr(budget, "MAX_ROWS", 1500)
    tables = split_tables(flights.store, flights.cfg, flights.version, "holdout")
    path = tmp_path / "predictions.parquet"
    got = stream.evaluate_streamed(tables, flights.cfg, candidate, champion, flights.train_y, predictions_path=path)
    assert_same_record(got, want)
    stored = pd.read_parquet(path)
    assert list(stored.columns) == list(predictions.columns)
    for column in flights.cfg.dataset.slices:
        assert stored[column].astype(str).tolist() == predictions[column].astype(str).tolist()
    np.testing.assert_allclose(stored[["y", "candidate", "champion"]].to_numpy(),
                               predictions[["y", "candidate", "champion"]].to_numpy())


def _peak_bytes(rows: int, chunk: int = 4000) -> int:
    """tracemalloc's peak while streaming ``rows`` synthetic rows (40 slice values) with a trivial model (the
    bootstrap's weight matrix, made once at the end, is left out: it depends on the samples alone)."""
    cfg = small_flights(1.0)
    cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, slices=["origin"]))
    model = SimpleNamespace(preprocessor=SimpleNamespace(categorical=["origin"], numeric=["x"]),
                            predict=lambda f, factorized=None: f["x"].to_numpy() * 2.0)
    rng = np.random.default_rng(0)

    def tables():
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            yield pa.table({"origin": [f"o{i % 40}" for i in range(start, start + n)], "x": rng.normal(size=n),
                            "arr_delay": rng.normal(size=n)})

    tracemalloc.start()
    try:
        stream.stream_holdout(tables(), cfg, model, model, rng.normal(size=100))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_rows() -> None:
    small, large = _peak_bytes(40_000), _peak_bytes(160_000)
    assert large < 1.25 * small, (small, large)  # four times the rows; an in-memory holdout would be ~4x


@pytest.mark.parametrize("which", ["flights", "late"])
def test_a_split_read_for_some_columns_has_the_rows_of_the_whole(which, request) -> None:
    """``split_tables(..., columns)`` reads only those columns (and what assigns the split), the same rows in order."""
    data = request.getfixturevalue(which)
    target = data.cfg.dataset.target
    for split in ("train", "holdout"):
        whole = read_split(data.store, data.cfg, data.version, split)[target].to_numpy(dtype=np.float64)
        tables = list(split_tables(data.store, data.cfg, data.version, split, [target]))
        assert tables and all(t.column_names == [target] for t in tables)
        np.testing.assert_array_equal(split_column(data.store, data.cfg, data.version, split, target), whole)


def test_a_batch_is_scored_a_slice_at_a_time(flights, monkeypatch) -> None:
    """A batch of the budget larger than ``SCORE_ROWS`` is scored in slices: every row counted once, same record."""
    candidate, champion = Shifted(flights.bundle(2), "carrier", "UA", 10.0), flights.bundle(1)
    whole = streamed(flights, candidate, champion, chunk=7000)
    monkeypatch.setattr(stream, "SCORE_ROWS", 333)
    sliced = streamed(flights, candidate, champion, chunk=7000)
    assert sliced.holdout_rows == whole.holdout_rows > 3 * 333
    assert_same_record(sliced, whole)
