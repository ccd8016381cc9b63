"""The boosted-trees families (LightGBM, XGBoost): one class, one process each, no torch.

Every tree family trains through ``trees.process`` (chunks of rounds, a checkpoint per chunk, exact resume, early
stopping on the validation split, step telemetry); they differ only in their library module (``<library>_lib``
beside this one, the ``library`` of the family's row in ``mlassets.core.config.families``): parameters, native
categorical features, the native model file (its ``MODEL_FILE``: ``model.txt``, ``model.ubj``; never a pickle) and
MLflow's own flavor for the logged booster.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from mlassets.core.train.feature_spec import FeatureSpec

if TYPE_CHECKING:
    from mlassets.core.config import PipelineConfig
    from mlassets.core.config.families import FamilyFacts
    from mlassets.core.train.job import TrainJob
    from mlassets.core.train.reporting import Reporter
    from mlassets.core.train.result import TrainingResult
    from mlassets.core.train.splits import Splits
    from mlassets.core.tune.space import Param


class TreeFamily:
    """A boosted-trees family: its row's ``library`` names the package and the module beside this one."""

    def __init__(self, facts: FamilyFacts) -> None:
        self.facts, self.name, self.library = facts, facts.name, facts.library
        self.weights_file: str = self.lib().MODEL_FILE

    def warm_start(self, bundle: Any, pre: Any, model: Any) -> tuple[Any, list[str]]:
        # a booster's trees are split on another version's category codes
        raise NotImplementedError(f"family {self.name!r} trains from scratch (its warm_start fact is false)")

    def lib(self) -> ModuleType:
        return importlib.import_module(f"mlassets.core.train.trees.{self.library}_lib")

    def check(self, cfg: PipelineConfig) -> None:
        if importlib.util.find_spec(self.library) is None:
            raise ValueError(f"model.family: {self.name!r} needs the {self.library} package (pip install "
                             f"{self.library})")

    def train(self, job: TrainJob, reporter: Reporter, hard_crash: bool) -> TrainingResult | None:
        from mlassets.core.train.trees import process

        return process.train(self.lib(), self.name, job, reporter, hard_crash)

    def save(self, model: Any, directory: Path) -> None:
        self.lib().save(model, Path(directory) / self.weights_file)

    def load(self, directory: Path, spec: FeatureSpec, model_config: Mapping[str, Any]) -> Any:
        path = Path(directory) / self.weights_file
        model = self.lib().load(path.read_bytes(), f"{self.weights_file} in {directory}")
        n_cat = len(spec.cardinalities)
        out = self.predict(model, np.ones((1, n_cat), dtype=np.int64), np.zeros((1, spec.n_numeric), np.float32))
        want = (1,) if spec.output_size == 1 else (1, spec.output_size)
        if out.shape != want:
            raise ValueError(f"{self.weights_file} in {directory} gives outputs of shape {out.shape[1:] or 1} per row; "
                             f"a {spec.task} model of this bundle gives {want[1:] or 1}")
        return model

    def predict(self, model: Any, x_cat: np.ndarray, x_num: np.ndarray) -> np.ndarray:
        return self.lib().predict(model, x_cat, x_num)

    def search_space(self, cfg: PipelineConfig) -> dict[str, Param]:
        from mlassets.core.config.search import SPACE

        return {name: SPACE[name] for name in self.facts.searches}

    def fit_trial(self, cfg: PipelineConfig, splits: Splits, out_dir: Path, data_version: str,
                  report: Callable[[int, float], None]) -> float:
        from mlassets.core.train.trees import process

        return process.fit_trial(self.lib(), cfg, splits, report)

    def recorded(self, cfg: PipelineConfig) -> dict[str, str]:
        return {}

    def requirements(self) -> list[str]:
        """What MLflow records a logged model of this family needs (exact versions)."""
        import mlflow
        import pandas

        library = importlib.import_module(self.library)
        return [f"{self.library}=={library.__version__}", f"numpy=={np.__version__}",
                f"pandas=={pandas.__version__}", f"mlflow=={mlflow.__version__}"]

    def log_native(self, model: Any, name: str) -> str:
        """The booster logged with MLflow's own flavor for the library (inputs: the bundle's preprocessed matrix,
        category codes then standardized numerics; outputs: raw scores); its model URI."""
        return self.lib().log_native(model, name, self.requirements())

