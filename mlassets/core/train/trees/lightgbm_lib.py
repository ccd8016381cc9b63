"""LightGBM for the boosted-trees loop: parameters, native categorical features, training in chunks of rounds.

A chunk is a fresh ``Booster`` whose sampling seeds come from (seed, chunk index), holding the trees of the chunks
before it (``LGBM_BoosterMerge``, what ``lightgbm.train(init_model=...)`` does) and starting from their scores, set
as init scores. Those scores are the previous chunk's own (its training and validation score updaters), read back
through LightGBM's inner predictions and carried in the checkpoint, so resuming re-predicts nothing and a run
killed between checkpoints makes exactly the calls an unkilled one makes. The inner predictions are probabilities
for the binary and multiclass objectives: both runs turn them back into logits the same way (``raw``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mlassets.core.config import PipelineConfig
from mlassets.core.config.model import tree_params
from mlassets.core.train.objectives import resolve_loss
from mlassets.core.train.trees.common import chunk_seed, label, matrix
from mlassets.core.train.trees.rows import SplitRows, TreeSplits

MODEL_FILE = "model.txt"
PRECISION = "fp64"  # the precision its training record names
OBJECTIVES = {"l1": "regression_l1", "mse": "regression", "huber": "huber", "bce": "binary",
              "cross_entropy": "multiclass"}
LOGIT_LIMIT = 40.0  # |logit| of a probability LightGBM rounded to 0 or 1 (sigmoid(40) is 1 - 4e-18)
LOG_FLOOR = -700.0  # log of a class probability that underflowed to 0


def params(cfg: PipelineConfig, task: str, n_classes: int, threads: int) -> dict[str, Any]:
    """LightGBM's parameters for this config: the trees' table mapped onto LightGBM's names, deterministic."""
    p = tree_params(cfg.model.params)
    seed = cfg.training.seed
    out: dict[str, Any] = {
        "objective": OBJECTIVES[resolve_loss(task, cfg.training.loss)], "learning_rate": p["learning_rate"],
        "num_leaves": p["num_leaves"], "max_depth": p["max_depth"], "min_data_in_leaf": p["min_child_samples"],
        "feature_fraction": p["feature_fraction"], "bagging_fraction": p["bagging_fraction"],
        "bagging_freq": 1 if p["bagging_fraction"] < 1 else 0, "lambda_l2": p["lambda_l2"], "max_bin": p["max_bin"],
        "max_cat_to_onehot": p["max_cat_to_onehot"], "num_threads": threads, "deterministic": True,
        "force_row_wise": True, "verbosity": -1, "metric": "None", "seed": seed, "data_random_seed": seed,
    }
    if out["objective"] == "huber":
        out["alpha"] = 1.0  # the network's HuberLoss(delta=1) on the standardized target
    if task == "multiclass":
        out["num_class"] = n_classes
    return out


def chunk_params(base: dict[str, Any], chunk: int) -> dict[str, Any]:
    """The sampling seeds of one chunk (feature fraction, bagging, extra trees): a function of the seed and chunk."""
    s = chunk_seed(int(base["seed"]), chunk)
    return {**base, "bagging_seed": s, "feature_fraction_seed": s, "extra_seed": s, "objective_seed": s}


def raw(task: str, inner: np.ndarray, copy: bool = True) -> np.ndarray:
    """Raw scores from LightGBM's inner predictions (identity for regression; logits from probabilities).
    Without ``copy`` a regression's scores may be LightGBM's own buffer, valid until its next inner prediction."""
    p = np.asarray(inner, dtype=np.float64)
    with np.errstate(divide="ignore"):
        if task == "binary":
            return np.clip(np.log(p) - np.log1p(-p), -LOGIT_LIMIT, LOGIT_LIMIT)
        if task == "multiclass":  # logits up to a per-row constant, which softmax ignores
            return np.maximum(np.log(p), LOG_FLOOR)
    return p.copy() if copy else p


class Engine:
    """Trains one run's boosters chunk by chunk on the constructed training and validation datasets."""

    model_file = MODEL_FILE
    carried = ("train_score", "val_score")

    def __init__(self, cfg: PipelineConfig, splits: TreeSplits, threads: int) -> None:
        import lightgbm as lgb

        self.task = splits.task
        self.params = params(cfg, splits.task, max(len(splits.classes), 1), threads)
        categorical = list(range(len(splits.pre.categorical)))
        dataset = {k: self.params[k] for k in ("max_bin", "data_random_seed", "verbosity", "num_threads")}
        lgb.Sequence.register(SplitRows)  # the rows a window at a time (``rows``)
        x, x_val = splits.rows("train"), splits.rows("validation")
        self.train = lgb.Dataset(x, label=label(x.labels()), params=dataset, categorical_feature=categorical,
                                 free_raw_data=True).construct()
        del x  # binned: the reader's window may go before the validation rows are read
        self.valid = lgb.Dataset(x_val, label=label(splits.y_val), reference=self.train, params=dataset,
                                 categorical_feature=categorical, free_raw_data=True).construct()
        self.booster: Any = None

    def begin(self, chunk: int, model: bytes | None, arrays: dict[str, np.ndarray]) -> None:
        """A booster for ``chunk``: the trees of ``model`` merged in, their scores as init scores."""
        import lightgbm as lgb
        from lightgbm.basic import _LIB, _safe_call

        self.booster = None  # the last chunk's booster (scores, gradients, row-wise bins) goes before the next comes
        if model is not None:
            self.train.set_init_score(arrays["train_score"])
            self.valid.set_init_score(arrays["val_score"])
        booster = lgb.Booster(params=chunk_params(self.params, chunk), train_set=self.train)
        if model is not None:
            before = lgb.Booster(model_str=model.decode())
            _safe_call(_LIB.LGBM_BoosterMerge(booster._handle, before._handle))
        booster.add_valid(self.valid, "validation")
        self.booster = booster

    def step(self, round_index: int) -> None:
        self.booster.update()

    def _inner(self, train: bool, copy: bool = True) -> np.ndarray:
        got: list[np.ndarray] = []

        def grab(preds: np.ndarray, _: Any) -> tuple[str, float, bool]:
            got.append(preds)
            return "raw", 0.0, False

        (self.booster.eval_train if train else self.booster.eval_valid)(feval=grab)
        return raw(self.task, got[0], copy)

    def val_raw(self) -> np.ndarray:
        """The validation split's raw outputs after the last round (LightGBM's cached scores: no prediction)."""
        return self._inner(train=False, copy=False)

    def end(self) -> tuple[bytes, dict[str, np.ndarray]]:
        """The model so far (every round) and the scores the next chunk starts from."""
        text = self.booster.model_to_string(num_iteration=-1)
        arrays = {"train_score": self._inner(train=True), "val_score": self._inner(train=False)}
        return text.encode(), arrays


def load(data: bytes, where: str) -> Any:
    """A LightGBM booster from its text model (never a pickle); ``ValueError`` naming ``where`` if it is not one."""
    import lightgbm as lgb

    try:
        return lgb.Booster(model_str=data.decode())
    except (lgb.basic.LightGBMError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}: not a LightGBM model ({str(exc)[:200]})") from None


def truncate(data: bytes, rounds: int) -> Any:
    """The booster of the first ``rounds`` rounds of a saved model."""
    return load(load(data, "checkpoint").model_to_string(num_iteration=rounds).encode(), "checkpoint")


def save(model: Any, path: Path) -> None:
    path.write_text(model.model_to_string(num_iteration=-1))


def predict(model: Any, x_cat: np.ndarray, x_num: np.ndarray) -> np.ndarray:
    """Raw scores on one thread: LightGBM's OpenMP pool costs a single row ~10 ms on a busy machine (measured on
    2 loaded cores: p50 0.03 ms with one thread, 13 ms with the default), what the gate's latency rule judges."""
    return np.asarray(model.predict(matrix(x_cat, x_num), raw_score=True, num_threads=1), dtype=np.float64)


def log_native(model: Any, name: str, requirements: list[str]) -> str:
    """The booster logged with MLflow's LightGBM flavor in the active run; its model URI."""
    import mlflow.lightgbm

    return mlflow.lightgbm.log_model(model, name=name, pip_requirements=requirements).model_uri
