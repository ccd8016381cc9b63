"""Boosted trees on streamed splits (``training.loader: stream``): the rows the libraries read are the preprocessed rows
of the whole files; the boosters are close to the in-memory ones and score what training measured; a run killed
between checkpoints ends with the same booster as an unkilled one."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import parse_config
from mlassets.core.train.artifact import load_bundle
from mlassets.core.train.family import family_of
from mlassets.core.train.job import TrainJob
from mlassets.core.train.objectives import validation_metric
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.trees.common import matrix
from mlassets.core.train.trees.rows import read_tree_splits
from tests.core.train.trees import FAMILIES, SAMPLED, kill_after, model_bytes, streamable, tree_config, tree_job

STREAM = {"loader": "stream", "stream_window_rows": 700}  # reads of 700 rows across row groups of 1000


def test_streamed_rows_are_the_whole_files_rows_read_forward(tmp_path) -> None:
    train, val = streamable(tmp_path)
    cfg = parse_config(tree_config("lightgbm", **STREAM))
    splits = read_tree_splits(cfg, str(train), str(val), None)
    frame = pd.read_parquet(train).dropna(subset=["arr_delay"])  # the whole file at once, the same preprocessing
    whole = matrix(*splits.pre.transform(frame))
    y = ((frame["arr_delay"].to_numpy() - splits.center) / splits.scale).astype(np.float32)
    rows = splits.rows("train")
    assert not rows.one_window() and rows.batch_size == 700
    assert len(rows) == splits.n_train == len(whole) == 3000 - 81
    picked = np.sort(np.random.default_rng(0).choice(len(whole), 300, replace=False))
    np.testing.assert_array_equal(np.array([rows[i] for i in picked]), whole[picked])  # LightGBM's sampled rows
    ranges = [rows[a:a + 650] for a in range(0, len(rows), 650)]  # ranges that straddle the reads
    np.testing.assert_array_equal(np.concatenate(ranges), whole)
    np.testing.assert_array_equal(rows[10], whole[10])  # backwards: the file is read again
    batches = list(rows.batches())
    assert max(len(b[0]) for b in batches) <= 700 and len(batches) >= 5
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), whole)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)
    np.testing.assert_array_equal(rows.labels(), y)
    frame = pd.read_parquet(val)
    np.testing.assert_array_equal(splits.y_val, frame["arr_delay"].dropna().to_numpy())
    with pytest.raises(IndexError, match="row 2919 of a split of 2919 rows"):
        rows[2919]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_streamed_booster_is_close_to_the_in_memory_one_and_scores_what_training_measured(family, tmp_path) -> None:
    streamable(tmp_path)
    fam, results = family_of(family), {}
    for loader in ("memory", "stream"):
        config = tree_config(family, {**SAMPLED, "rounds": 30}, **{**STREAM, "loader": loader})
        results[loader] = fam.train(TrainJob.from_json(tree_job(tmp_path, config, loader)), PrintReporter(),
                                    hard_crash=False)
    memory, stream = results["memory"], results["stream"]
    assert (stream.n_train, stream.n_val) == (memory.n_train, memory.n_val) == (3000 - 81, 800 - 22)
    assert stream.val_metric == pytest.approx(memory.val_metric, rel=0.03)
    rows = pd.read_parquet(tmp_path / "data" / "validation.parquet").dropna(subset=["arr_delay"])
    bundle = load_bundle(stream.model_dir)  # the streamed preprocessing, the raw rows: what the gate will score
    raw = fam.predict(bundle.model, *bundle.preprocessor.transform(rows))
    measured = validation_metric("regression", raw, rows["arr_delay"].to_numpy(), bundle.target_center,
                                 bundle.target_scale)
    assert measured == pytest.approx(stream.val_metric, rel=1e-9)


@pytest.mark.e2e  # processes: in `make test`, not `make test-fast`
@pytest.mark.parametrize("family", FAMILIES)
def test_a_streamed_run_killed_between_checkpoints_ends_with_the_same_booster(family, tmp_path) -> None:
    streamable(tmp_path)
    config = tree_config(family, {**SAMPLED, "rounds": 30, "early_stopping_rounds": 0}, **STREAM,
                         faults={"slow_rank": 0, "slow_rank_ms": 60})
    fam, reporter = family_of(family), PrintReporter()
    whole = fam.train(TrainJob.from_json(tree_job(tmp_path, config, "whole")), reporter, hard_crash=False)
    killed = tree_job(tmp_path, config, "killed")
    kill_after(killed, "step-000000010", {**os.environ, "OMP_NUM_THREADS": "1"})  # rounds 11-20 in flight
    assert not (killed.parent / "checkpoints" / "step-000000030").exists()
    resumed = fam.train(TrainJob.from_json(killed), reporter, hard_crash=False)
    assert resumed.attempt == 2 and resumed.resumed_from_step in (10, 20), resumed.resumed_from_step
    assert model_bytes(tmp_path / "whole") == model_bytes(killed.parent)  # the bundle's model file, byte for byte
    assert (whole.final_weights_sha256, whole.curves) == (resumed.final_weights_sha256, resumed.curves)
    a, b = Path(whole.final_checkpoint), Path(read_outcome(killed.parent).result.final_checkpoint)
    assert a.name == b.name == "step-000000030"
    for path in sorted(a.iterdir()):  # the model, the carried scores (LightGBM's), the progress
        assert path.read_bytes() == (b / path.name).read_bytes(), path.name
