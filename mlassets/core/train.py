"""Model training, run as a subprocess so it can later scale out with torchrun:

    python -m mlassets.core.train --job job.json
    torchrun --nproc-per-node=N -m mlassets.core.train --job job.json   # once DDP lands (world size 1 now)

Writes ``<out_dir>/model`` (a bundle, see ``mlassets.core.artifact``) and ``<out_dir>/result.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import torch
from torch import nn

from mlassets.core.artifact import MANIFEST, WEIGHTS, ModelBundle, build_model, save_bundle
from mlassets.core.config import PipelineConfig, parse_config
from mlassets.core.preprocess import Preprocessor
from mlassets.core.reporting import PrintReporter, Reporter

EVAL_BATCH = 65536


@dataclass
class TrainJob:
    """Everything a training subprocess needs, as one JSON file."""

    config: dict[str, Any]  # PipelineConfig.to_dict()
    train_path: str
    validation_path: str
    out_dir: str
    data_version: str

    @classmethod
    def from_json(cls, path: str | Path) -> TrainJob:
        data = json.loads(Path(path).read_text())
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"job file {path}: {exc}") from exc

    def to_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        return path


def setup_distributed() -> tuple[int, int]:
    """``(rank, world_size)`` from the torchrun environment; only world size 1 is supported so far."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world_size != 1:
        raise RuntimeError(f"WORLD_SIZE={world_size}: multi-process training is not implemented yet")
    return rank, world_size


def _load(path: str, columns: list[str], what: str) -> pd.DataFrame:
    """Read only the needed columns, naming any that the file lacks."""
    if not Path(path).is_file():
        raise ValueError(f"{what} data {path!r} does not exist")
    have = set(pq.read_schema(path).names)
    for column in columns:
        if column not in have:
            raise ValueError(f"{what} data {path}: missing column {column!r}")
    return pd.read_parquet(path, columns=columns)


def _loss(name: str) -> nn.Module:
    losses: dict[str, nn.Module] = {"l1": nn.L1Loss(), "mse": nn.MSELoss(), "huber": nn.HuberLoss()}
    if name not in losses:
        raise ValueError(f"training.loss: unknown loss {name!r}")
    return losses[name]


def _mae(model: nn.Module, x_cat: torch.Tensor, x_num: torch.Tensor, y: np.ndarray,
         center: float, scale: float) -> float:
    """Mean absolute error in target units, computed in float64."""
    model.eval()
    preds = []
    with torch.no_grad():
        for start in range(0, len(y), EVAL_BATCH):
            stop = start + EVAL_BATCH
            preds.append(model(x_cat[start:stop], x_num[start:stop]).double().numpy())
    pred = np.concatenate(preds) * scale + center
    return float(np.mean(np.abs(pred - y)))


def _train(cfg: PipelineConfig, train_df: pd.DataFrame, val_df: pd.DataFrame, reporter: Reporter,
           rank: int, world_size: int) -> tuple[ModelBundle, list[dict[str, Any]], int, float]:
    """The epoch loop; returns the bundle holding the best epoch's weights and the curves."""
    feats, tr, target = cfg.features, cfg.training, cfg.dataset.target
    pre = Preprocessor.fit(train_df, feats.categorical, feats.numeric)
    xc, xn = pre.transform(train_df)
    vc, vn = pre.transform(val_df)
    y_train = train_df[target].to_numpy(dtype=np.float64)
    y_val = val_df[target].to_numpy(dtype=np.float64)
    center = float(np.median(y_train))
    scale = float(np.std(y_train))
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    y = torch.from_numpy(((y_train - center) / scale).astype(np.float32))

    model_config = asdict(cfg.model)
    model = build_model(model_config, pre.cardinalities, len(pre.numeric))
    optimizer = torch.optim.AdamW(model.parameters(), lr=tr.lr, weight_decay=tr.weight_decay)
    loss_fn = _loss(tr.loss)
    curves: list[dict[str, Any]] = []
    best_epoch, best_mae, best_state = 0, float("inf"), None
    n = len(y)
    for epoch in range(1, tr.epochs + 1):
        started = time.perf_counter()
        model.train()
        gen = torch.Generator().manual_seed(tr.seed + epoch)
        perm = torch.randperm(n, generator=gen)[rank::world_size]  # each rank its own shard
        total = torch.zeros((), dtype=torch.float64)
        for idx in perm.split(tr.batch_size):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(xc[idx], xn[idx]), y[idx])
            loss.backward()
            optimizer.step()
            total += loss.detach().double() * len(idx)
        train_loss = float(total) / len(perm)
        val_mae = _mae(model, vc, vn, y_val, center, scale)
        curves.append({"epoch": epoch, "train_loss": train_loss, "val_mae": val_mae})
        reporter.log(f"epoch {epoch}/{tr.epochs}: train_loss={train_loss:.5f} val_mae={val_mae:.4f} "
                     f"({time.perf_counter() - started:.2f}s)")
        if best_state is None or val_mae < best_mae:
            best_epoch, best_mae = epoch, val_mae
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    assert best_state is not None  # epochs >= 1 is enforced by the config
    model.load_state_dict(best_state)
    model.eval()
    bundle = ModelBundle(model, pre, model_config, target, center, scale)
    return bundle, curves, best_epoch, best_mae


def run_training(job: TrainJob, reporter: Reporter) -> dict[str, Any]:
    """Train one model for ``job``; writes ``out_dir/model`` and ``out_dir/result.json`` and returns it."""
    started = time.perf_counter()
    cfg = parse_config(job.config)
    tr, feats, target = cfg.training, cfg.features, cfg.dataset.target
    rank, world_size = setup_distributed()
    columns = list(dict.fromkeys([*feats.categorical, *feats.numeric, target]))
    train_df = _load(job.train_path, columns, "training")
    val_df = _load(job.validation_path, columns, "validation")
    for what, df in (("training", train_df), ("validation", val_df)):
        missing_target = int(df[target].isna().sum())
        if missing_target:
            reporter.log(f"{what}: dropping {missing_target} rows without a {target!r} value")
        if len(df) - missing_target == 0:
            raise ValueError(f"{what} data is empty: no rows with a {target!r} value")
    train_df = train_df[train_df[target].notna()].reset_index(drop=True)
    val_df = val_df[val_df[target].notna()].reset_index(drop=True)

    previous = (torch.are_deterministic_algorithms_enabled(), torch.get_num_threads())
    random.seed(tr.seed)
    np.random.seed(tr.seed)
    torch.manual_seed(tr.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(tr.threads)
    try:
        reporter.log(f"training on {len(train_df)} rows, validating on {len(val_df)} "
                     f"(data {job.data_version}, seed {tr.seed}, threads {tr.threads})")
        bundle, curves, best_epoch, best_mae = _train(cfg, train_df, val_df, reporter, rank, world_size)
    finally:
        torch.use_deterministic_algorithms(previous[0])
        torch.set_num_threads(previous[1])

    out_dir = Path(job.out_dir)
    bundle.meta = {"data_version": job.data_version, "config_hash": cfg.config_hash(),
                   "torch_version": torch.__version__, "best_epoch": str(best_epoch)}
    model_dir = save_bundle(bundle, out_dir / "model")
    manifest = json.loads((model_dir / MANIFEST).read_text())
    result = {
        "curves": curves,
        "best_epoch": best_epoch,
        "val_mae": best_mae,
        "n_train": len(train_df),
        "n_val": len(val_df),
        "seed": tr.seed,
        "threads": tr.threads,
        "world_size": world_size,
        "torch_version": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "train_seconds": round(time.perf_counter() - started, 3),
        "weights_sha256": manifest["files"][WEIGHTS]["sha256"],
        "data_version": job.data_version,
    }
    tmp = out_dir / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, out_dir / "result.json")
    reporter.log(f"best epoch {best_epoch}: val_mae={best_mae:.4f}; model in {model_dir}")
    return result


def _summary(job: TrainJob, result: dict[str, Any]) -> dict[str, str | float | int]:
    out_dir = Path(job.out_dir).resolve()
    keys = ("val_mae", "best_epoch", "n_train", "n_val", "train_seconds", "weights_sha256")
    return {**{k: result[k] for k in keys},
            "model_dir": str(out_dir / "model"), "result_path": str(out_dir / "result.json")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mlassets.core.train", description="Train one model.")
    parser.add_argument("--job", required=True, help="path of a TrainJob JSON file")
    args = parser.parse_args(argv)
    if os.environ.get("DAGSTER_PIPES_CONTEXT"):
        from mlassets.integrations.pipes import PipesReporter

        with PipesReporter() as reporter:  # an exception is reported to Dagster, then re-raised
            job = TrainJob.from_json(args.job)
            result = run_training(job, reporter)
            reporter.report(_summary(job, result))
        return
    reporter = PrintReporter()
    try:
        job = TrainJob.from_json(args.job)
        result = run_training(job, reporter)
    except (ValueError, OSError) as exc:
        print(f"training failed: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    reporter.report(_summary(job, result))


if __name__ == "__main__":
    main()
