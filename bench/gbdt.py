"""Boosted-trees benchmark, a ratio of two sides measured in the same run, alternated to share the machine's noise.

- ``gbdt_overhead``: the platform's LightGBM fit (dataset construction, rounds in chunks, the validation metric
  after every round, a checkpoint per chunk with its fsyncs, step telemetry, the best model cut from the last
  checkpoint) / a bare ``lightgbm.train`` on the same arrays and parameters with LightGBM's own validation metric
  every round. Wall time, one thread each, the platform's default checkpoint cadence, no early stopping (both sides
  train every round); validation rows 2% of the training rows, as a week is of the demo's year. The ratio of the
  fastest run of each side (others' work on a shared machine only ever adds time).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.checks import expect, expect_equal, expect_files
from bench.registry import Result, benchmark, toy
from mlassets.core.config import load_config, parse_config, shipped_configs
from mlassets.core.train.checkpoint.trees import TreeCheckpoints
from mlassets.core.train.splits import Splits, read_splits
from mlassets.core.train.steplog import StepLog
from mlassets.core.train.synthetic import write_splits
from mlassets.core.train.trees import lightgbm_lib
from mlassets.core.train.trees.common import label, matrix
from mlassets.core.train.trees.fit import Watch, fit
from mlassets.core.train.trees.process import plan_of
from mlassets.core.train.trees.rows import read_tree_splits

# The demo's shape: a validation week beside a year of training rows (flights: ~6,500 rows vs ~300,000).
ROWS, VAL_ROWS, ROUNDS, PAIRS = 200_000, 4_000, 250, 3


def _config(rounds: int):
    data = load_config(shipped_configs()["flights_lightgbm"]).to_dict()
    data["model"]["params"].update({"rounds": rounds, "early_stopping_rounds": 0})
    data["training"].update({"threads": 1, "checkpoint_every_steps": 0})  # 0: the platform's default cadence
    return parse_config(data)


def platform_fit(cfg, data: tuple[Path, Path], work: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of the platform's fit of the split files ``data`` (``trees.process.train`` between scanning
    the splits and writing the bundle: the rows read into LightGBM's datasets, the rounds, the checkpoints)."""
    shutil.rmtree(work, ignore_errors=True)
    splits = read_tree_splits(cfg, str(data[0]), str(data[1]), None)  # the scan, as the bare side's read
    started, cpu = time.perf_counter(), time.process_time()
    engine = lightgbm_lib.Engine(cfg, splits, cfg.training.threads)
    plan = plan_of(cfg)
    checkpoints = TreeCheckpoints(work / "checkpoints", lightgbm_lib.MODEL_FILE, "bench", 2, lambda m: None)
    steps = StepLog(work / "telemetry", 0, 1)
    progress, _ = fit(engine, splits, plan, Watch(checkpoints, steps, telemetry_every=50))
    steps.write()
    lightgbm_lib.truncate(progress.model, progress.best_round)
    expect(progress.best_round > 0, f"the platform's fit kept no round (best round {progress.best_round})")
    expect_files([work / "checkpoints"], "the platform's fit: checkpoints")
    return time.perf_counter() - started, time.process_time() - cpu


def bare_fit(cfg, splits: Splits, rounds: int) -> tuple[float, float]:
    """(wall, CPU) seconds of ``lightgbm.train`` on the same arrays and parameters, its own l1 on validation."""
    import lightgbm as lgb

    started, cpu = time.perf_counter(), time.process_time()
    params = {**lightgbm_lib.params(cfg, splits.task, 1, cfg.training.threads), "metric": "l1"}
    categorical = list(range(splits.x_cat.shape[1]))
    dataset = {k: params[k] for k in ("max_bin", "data_random_seed", "verbosity", "num_threads")}
    train = lgb.Dataset(matrix(splits.x_cat, splits.x_num), label=label(splits.y), params=dataset,
                        categorical_feature=categorical)
    valid = lgb.Dataset(matrix(splits.val_cat, splits.val_num), reference=train, params=dataset,
                        label=(splits.y_val - splits.center) / splits.scale, categorical_feature=categorical)
    booster = lgb.train(params, train, num_boost_round=rounds, valid_sets=[valid])
    expect_equal(booster.current_iteration(), rounds, "rounds of the bare lightgbm.train")
    return time.perf_counter() - started, time.process_time() - cpu


@benchmark("gbdt_overhead", goal="platform LightGBM fit / bare lightgbm.train", better="lower", target=1.05)
def gbdt_overhead() -> Result:
    rows, val_rows, rounds = toy(ROWS, 3_000), toy(VAL_ROWS, 300), toy(ROUNDS, 20)
    cfg = _config(rounds)
    with tempfile.TemporaryDirectory(prefix="bench-gbdt-") as tmp:
        root = Path(tmp)
        train, val = write_splits(root / "data", rows, val_rows)
        splits = read_splits(cfg, str(train), str(val), None)
        expect_equal(splits.n_train, rows, "training rows read")
        ours, bare = [], []
        for i in range(toy(PAIRS, 1)):  # alternated: bare, platform, platform, bare
            order = (bare_fit, platform_fit) if i % 2 == 0 else (platform_fit, bare_fit)
            for side in order:
                if side is bare_fit:
                    bare.append(bare_fit(cfg, splits, rounds))
                else:
                    ours.append(platform_fit(cfg, (train, val), root / "run"))
    ratio = min(w for w, _ in ours) / min(w for w, _ in bare)  # the least disturbed run of each (shared machine)
    cpu = min(c for _, c in ours) / min(c for _, c in bare)
    per = plan_of(cfg).per_chunk
    return Result(value=ratio, unit="x", detail=(
        f"{rows} rows x {splits.x_cat.shape[1] + splits.x_num.shape[1]} features, {val_rows} validation rows, "
        f"{rounds} rounds, 1 thread, a checkpoint every {per} rounds; wall platform "
        f"{np.round([w for w, _ in ours], 2).tolist()} s, bare {np.round([w for w, _ in bare], 2).tolist()} s; "
        f"CPU-time ratio {cpu:.3f}"))
