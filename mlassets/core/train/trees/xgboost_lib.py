"""XGBoost for the boosted-trees loop: parameters, native categorical features, training in chunks of rounds.

Every chunk loads the previous chunk's saved model (UBJSON bytes, as the checkpoint holds them) into a fresh
``Booster`` seeded from (seed, chunk index), so a run killed between checkpoints makes exactly the calls an
unkilled one makes. XGBoost restarts its sampling streams whenever a model is loaded (measured: with
``subsample``/``colsample_bytree`` < 1 a reloaded model goes on differently), hence the per-chunk seeds. Loading
re-predicts the training rows from the trees (float32 sums, in tree order: the same margins as the cache it
replaces), the cost of a chunk boundary. ``hist`` trees; ``device: cuda`` where a GPU and a CUDA build exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mlassets.core import lineage
from mlassets.core.config import PipelineConfig
from mlassets.core.config.model import tree_params
from mlassets.core.train.objectives import resolve_loss
from mlassets.core.train.trees.common import chunk_seed, label, matrix
from mlassets.core.train.trees.rows import SplitRows, TreeSplits

MODEL_FILE = "model.ubj"
PRECISION = "fp32"  # the precision its training record names
OBJECTIVES = {"l1": "reg:absoluteerror", "mse": "reg:squarederror", "huber": "reg:pseudohubererror",
              "bce": "binary:logistic", "cross_entropy": "multi:softprob"}


def params(cfg: PipelineConfig, task: str, n_classes: int, threads: int, device: str) -> dict[str, Any]:
    """XGBoost's parameters for this config: the trees' table mapped onto XGBoost's names (leaf-wise growth, so
    ``num_leaves`` means what it means for LightGBM; ``min_child_samples`` is the hessian sum ``min_child_weight``,
    which counts rows for regression)."""
    p = tree_params(cfg.model.params)
    out: dict[str, Any] = {
        "objective": OBJECTIVES[resolve_loss(task, cfg.training.loss)], "eta": p["learning_rate"],
        "grow_policy": "lossguide", "max_leaves": p["num_leaves"], "max_depth": max(p["max_depth"], 0),
        "min_child_weight": p["min_child_samples"], "colsample_bytree": p["feature_fraction"],
        "subsample": p["bagging_fraction"], "lambda": p["lambda_l2"], "max_bin": p["max_bin"],
        "max_cat_to_onehot": p["max_cat_to_onehot"], "tree_method": "hist", "nthread": threads,
        "seed": cfg.training.seed, "device": device, "disable_default_eval_metric": 1, "verbosity": 0,
    }
    if out["objective"] == "reg:pseudohubererror":
        out["huber_slope"] = 1.0  # the network's HuberLoss(delta=1) on the standardized target
    if task == "multiclass":
        out["num_class"] = n_classes
    return out


def feature_types(n_cat: int, n_num: int) -> list[str]:
    """Category codes as categorical columns (``c``), numerics as ``q``."""
    return ["c"] * n_cat + ["q"] * n_num


def quantile_dmatrix(rows: SplitRows, types: list[str], threads: int, max_bin: int, ref: Any = None) -> Any:
    """A ``QuantileDMatrix`` of a split, fed a window of rows at a time (XGBoost reads the split more than once: its
    quantile sketch, then its bins; a split of one window is read once); quantized by ``ref``'s cuts when given (the
    validation split)."""
    import xgboost as xgb

    class Batches(xgb.DataIter):
        def __init__(self) -> None:
            super().__init__(release_data=True)
            self._batches: Any = None

        def reset(self) -> None:
            self._batches = None

        def next(self, input_data: Any) -> bool:
            if self._batches is None:
                self._batches = rows.batches()
            batch = next(self._batches, None)
            if batch is None:
                return False
            input_data(data=batch[0], label=label(batch[1]), feature_types=types)
            return True

    return xgb.QuantileDMatrix(Batches(), max_bin=max_bin, ref=ref, enable_categorical=True, nthread=threads)


class Engine:
    """Trains one run's boosters chunk by chunk; nothing but the model is carried between chunks."""

    model_file = MODEL_FILE
    carried: tuple[str, ...] = ()

    def __init__(self, cfg: PipelineConfig, splits: TreeSplits, threads: int) -> None:
        self.task = splits.task
        self.device = lineage.tree_device(cfg.model.family)
        self.params = params(cfg, splits.task, max(len(splits.classes), 1), threads, self.device)
        types, bins = feature_types(len(splits.pre.categorical), len(splits.pre.numeric)), self.params["max_bin"]
        self.train = quantile_dmatrix(splits.rows("train"), types, threads, bins)  # a window at a time
        self.valid = quantile_dmatrix(splits.rows("validation"), types, threads, bins, ref=self.train)
        self.booster: Any = None

    def begin(self, chunk: int, model: bytes | None, arrays: dict[str, np.ndarray]) -> None:
        import xgboost as xgb

        chunk_params = {**self.params, "seed": chunk_seed(int(self.params["seed"]), chunk)}
        self.booster = None  # the last chunk's booster (its prediction cache, gradients) goes before the next comes
        self.booster = xgb.Booster(chunk_params, [self.train, self.valid],
                                   model_file=bytearray(model) if model is not None else None)

    def step(self, round_index: int) -> None:
        self.booster.update(self.train, iteration=round_index)

    def val_raw(self) -> np.ndarray:
        """Margins of the validation split (XGBoost's prediction cache: only the new tree is evaluated)."""
        return np.asarray(self.booster.predict(self.valid, output_margin=True), dtype=np.float64)

    def end(self) -> tuple[bytes, dict[str, np.ndarray]]:
        return bytes(self.booster.save_raw("ubj")), {}


def load(data: bytes, where: str) -> Any:
    """An XGBoost booster from its UBJSON model (never a pickle); ``ValueError`` naming ``where`` if it is not one."""
    import xgboost as xgb

    try:
        booster = xgb.Booster(model_file=bytearray(data))
    except xgb.core.XGBoostError as exc:
        raise ValueError(f"{where}: not an XGBoost model ({str(exc).splitlines()[0][:200]})") from None
    booster.set_param({"device": "cpu", "nthread": 1})  # serving scores on the CPU, one row at a time or in batches
    return booster


def truncate(data: bytes, rounds: int) -> Any:
    """The booster of the first ``rounds`` rounds of a saved model."""
    return load(bytes(load(data, "checkpoint")[:rounds].save_raw("ubj")), "checkpoint")


def save(model: Any, path: Path) -> None:
    path.write_bytes(bytes(model.save_raw("ubj")))


def predict(model: Any, x_cat: np.ndarray, x_num: np.ndarray) -> np.ndarray:
    """Margins, predicted in place (no DMatrix: a single row costs ~0.2 ms instead of several); the booster knows
    which columns are categorical."""
    return np.asarray(model.inplace_predict(matrix(x_cat, x_num), predict_type="margin"), dtype=np.float64)


def log_native(model: Any, name: str, requirements: list[str]) -> str:
    """The booster logged with MLflow's XGBoost flavor (UBJSON) in the active run; its model URI."""
    import mlflow.xgboost

    return mlflow.xgboost.log_model(model, name=name, model_format="ubj", pip_requirements=requirements).model_uri
