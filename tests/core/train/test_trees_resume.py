"""Boosted trees killed between checkpoints end with the same booster as an unkilled run (both libraries, with
feature and row sampling on, which restart their random streams in a naively continued booster)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlassets.core.train.artifact import load_bundle
from mlassets.core.train.family import family_of
from mlassets.core.train.faults import InjectedCrash
from mlassets.core.train.job import TrainJob
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.reporting import PrintReporter
from tests.core.train.trees import FAMILIES, SAMPLED, command, kill_after, model_bytes, tree_config, tree_job

pytestmark = pytest.mark.e2e  # slow (processes, kills, memory): in `make test`, not `make test-fast`

ROUND_MS = 40  # the slow-rank fault: every round takes this much longer (no numbers change), so a kill lands mid-chunk


@pytest.mark.parametrize("family", FAMILIES)
def test_a_run_killed_between_checkpoints_ends_with_the_same_booster(family, tmp_path) -> None:
    config = tree_config(family, {**SAMPLED, "rounds": 50, "early_stopping_rounds": 0},
                         faults={"slow_rank": 0, "slow_rank_ms": ROUND_MS})
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    whole, killed = tree_job(tmp_path, config, "whole"), tree_job(tmp_path, config, "killed")
    subprocess.run(command(whole), env=env, check=True, capture_output=True)

    kill_after(killed, "step-000000020", env)  # rounds 21-30 are in flight: a chunk without its checkpoint
    assert not (killed.parent / "result.json").exists()
    assert not (killed.parent / "checkpoints" / "step-000000050").exists()
    subprocess.run(command(killed), env=env, check=True, capture_output=True)

    a, b = read_outcome(whole.parent).result, read_outcome(killed.parent).result
    assert (a.resumed_from_step, a.attempt) == (0, 1)
    assert b.attempt == 2 and b.resumed_from_step in (20, 30, 40), b.resumed_from_step  # later if the kill was late
    assert model_bytes(whole.parent) == model_bytes(killed.parent)  # the bundle's model file, byte for byte
    assert a.weights_sha256 == b.weights_sha256 and a.final_weights_sha256 == b.final_weights_sha256
    assert a.curves == b.curves and a.steps == b.steps == 50
    final = Path(a.final_checkpoint).name
    assert final == Path(b.final_checkpoint).name == "step-000000050"
    files = sorted(p.name for p in Path(a.final_checkpoint).iterdir())
    for name in files:  # the final checkpoint too: model, carried scores, progress
        assert (Path(a.final_checkpoint) / name).read_bytes() == (Path(b.final_checkpoint) / name).read_bytes(), name
    rows = pd.read_parquet(tmp_path / "data" / "validation.parquet")
    np.testing.assert_array_equal(load_bundle(whole.parent / "model").predict(rows),
                                  load_bundle(killed.parent / "model").predict(rows))
    steps = pd.read_parquet(Path(b.telemetry_dir) / "rank0.parquet")
    assert sorted(steps["step"]) == list(range(1, 51))  # the killed attempt's rows after its checkpoint are gone
    assert set(steps["attempt"]) == {1, 2}


@pytest.mark.parametrize("family", FAMILIES)
def test_an_injected_crash_resumes_and_sampling_seeds_follow_the_chunks(family, tmp_path) -> None:
    config = tree_config(family, {**SAMPLED, "rounds": 30, "early_stopping_rounds": 0})
    crashing = tree_config(family, {**SAMPLED, "rounds": 30, "early_stopping_rounds": 0},
                           faults={"crash_at_step": 15})
    fam, reporter = family_of(family), PrintReporter()
    whole = fam.train(TrainJob.from_json(tree_job(tmp_path, config, "whole")), reporter, hard_crash=False)
    job = TrainJob.from_json(tree_job(tmp_path, crashing, "crash"))
    with pytest.raises(InjectedCrash, match="step 15"):
        fam.train(job, reporter, hard_crash=False)
    resumed = fam.train(job, reporter, hard_crash=False)
    assert resumed.resumed_from_step == 10 and resumed.weights_sha256 == whole.weights_sha256
    other = tree_config(family, {**SAMPLED, "rounds": 30, "early_stopping_rounds": 0}, checkpoint_every_steps=15)
    chunked = fam.train(TrainJob.from_json(tree_job(tmp_path, other, "chunks-of-15")), reporter, hard_crash=False)
    assert chunked.weights_sha256 != whole.weights_sha256  # the chunk length is part of the numbers ...
    rows = pd.read_parquet(tmp_path / "data" / "validation.parquet")
    plain = [fam.train(TrainJob.from_json(tree_job(tmp_path, tree_config(family, {"rounds": 30}, **extra), name)),
                       reporter, hard_crash=False).model_dir
             for name, extra in (("plain-10", {}), ("plain-15", {"checkpoint_every_steps": 15}))]
    np.testing.assert_array_equal(*(load_bundle(d).predict(rows) for d in plain))  # ... only through the sampling
    # seeds: without sampling a regression's trees do not depend on where the chunks begin
