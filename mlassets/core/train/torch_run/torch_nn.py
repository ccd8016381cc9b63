"""The networks: the built-in embeddings + MLP and a plug-in module (``model.plugin``), one loop for both.

Both train through ``mlassets.core.train.torch_run.process`` (torchrun, DDP or FSDP, exact resume, async checkpoints,
telemetry, profiling, bf16 on GPU); they differ only in how the module is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from mlassets.core.train import plugin
from mlassets.core.train.artifact import WEIGHTS
from mlassets.core.train.feature_spec import FeatureSpec
from mlassets.core.train.torch_run.mlp import build_model

if TYPE_CHECKING:
    from mlassets.core.config import PipelineConfig
    from mlassets.core.config.families import FamilyFacts
    from mlassets.core.config.search import Param
    from mlassets.core.train.artifact import ModelBundle
    from mlassets.core.train.job import TrainJob
    from mlassets.core.train.reporting import Reporter
    from mlassets.core.train.result import TrainingResult
    from mlassets.core.train.splits import Splits


# rows per forward call: a layer's activations (rows x width floats, 2 MiB at 8,192 x 64) are then reused memory; at
# 65,536 rows each 16 MiB activation came fresh from the OS (~80,000 page faults per million rows scored, a quarter of
# an MLP's forward on one thread)
PREDICT_ROWS = 8192


class TorchFamily:
    """What both torch families share: tensor-only weights, the torch loop, a search space from their facts."""

    weights_file = WEIGHTS

    def __init__(self, facts: FamilyFacts) -> None:
        self.facts, self.name = facts, facts.name

    def build(self, spec: FeatureSpec, model_config: Mapping[str, Any]) -> nn.Module:
        raise NotImplementedError

    def check(self, cfg: PipelineConfig) -> None:
        return None

    def train(self, job: TrainJob, reporter: Reporter, hard_crash: bool) -> TrainingResult | None:
        from mlassets.core.train.torch_run.process import run_training

        return run_training(job, reporter, hard_crash=hard_crash)

    def save(self, model: nn.Module, directory: Path) -> None:
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        torch.save(state, Path(directory) / WEIGHTS)

    def load(self, directory: Path, spec: FeatureSpec, model_config: Mapping[str, Any]) -> nn.Module:
        path = Path(directory) / WEIGHTS
        try:
            state = torch.load(path, weights_only=True, map_location="cpu")
        except Exception as exc:  # noqa: BLE001 - an UnpicklingError, a RuntimeError, an EOFError ...
            raise ValueError(f"{WEIGHTS} in {directory}: refused to load (tensors only): {exc}") from exc
        if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise ValueError(f"{WEIGHTS} in {directory}: expected a state_dict of tensors")
        with torch.random.fork_rng(devices=[]):  # building consumes no caller's random numbers
            model = self.build(spec, model_config)
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise ValueError(f"{WEIGHTS} in {directory} does not fit the model: {exc}") from exc
        return model.eval()

    def predict(self, model: nn.Module, x_cat: np.ndarray, x_num: np.ndarray) -> np.ndarray:
        """The module's outputs (float64), ``PREDICT_ROWS`` rows at a time (each row's output is its own)."""
        if model.training:  # loaded in eval mode; a module handed over mid-training is switched once
            model.eval()
        cat, num = torch.from_numpy(x_cat), torch.from_numpy(x_num)
        with torch.no_grad():  # not inference_mode: a plug-in's lazily built parameters must stay trainable
            if len(cat) <= PREDICT_ROWS:
                return model(cat, num).double().numpy()
            parts = [model(cat[s:s + PREDICT_ROWS], num[s:s + PREDICT_ROWS]) for s in range(0, len(cat), PREDICT_ROWS)]
            return torch.cat(parts).double().numpy()

    def search_space(self, cfg: PipelineConfig) -> dict[str, Param]:
        from mlassets.core.config.search import SPACE

        return {name: SPACE[name] for name in self.facts.searches}

    def fit_trial(self, cfg: PipelineConfig, splits: Splits, out_dir: Path, data_version: str,
                  report: Callable[[int, float], None]) -> float:
        from mlassets.core.train.torch_run.trial import fit_torch_trial

        return fit_torch_trial(cfg, splits, out_dir, data_version, report)

    def recorded(self, cfg: PipelineConfig) -> dict[str, str]:
        return {}

    def warm_start(self, bundle: ModelBundle, pre: Any, module: nn.Module) -> tuple[dict[str, torch.Tensor], list[str]]:
        """``module``'s state with ``bundle``'s weights mapped onto it, and the tensors left as seeded."""
        from mlassets.core.train.torch_run.warm_start import mapped_state

        return mapped_state(bundle, pre, module)


class MLPFamily(TorchFamily):
    """The built-in network: category embeddings and an MLP (``model.embedding_dim``, ``hidden``, ``dropout``)."""

    def build(self, spec: FeatureSpec, model_config: Mapping[str, Any]) -> nn.Module:
        return build_model(dict(model_config), spec.cardinalities, spec.n_numeric, spec.output_size)


class PluginFamily(TorchFamily):
    """The user's ``nn.Module``, built by ``model.plugin`` from the feature spec."""

    def build(self, spec: FeatureSpec, model_config: Mapping[str, Any]) -> nn.Module:
        name = str(model_config.get("plugin", ""))
        try:
            module = plugin.builder(name)(spec)
        except plugin.PluginError:
            raise
        except Exception as exc:
            raise plugin.PluginError(f"model.plugin {name!r} failed to build a module: {type(exc).__name__}: "
                                     f"{exc}") from None
        if not isinstance(module, nn.Module):
            raise plugin.PluginError(f"model.plugin {name!r} returned {type(module).__name__}, not a torch.nn.Module")
        _check_output(module, spec, name)
        return module

    def check(self, cfg: PipelineConfig) -> None:
        plugin.builder(cfg.model.plugin)  # importable, and a function: before any data is read

    def recorded(self, cfg: PipelineConfig) -> dict[str, str]:
        return {"plugin": cfg.model.plugin, "plugin_sha256": plugin.source_sha256(cfg.model.plugin)}


def _check_output(module: nn.Module, spec: FeatureSpec, name: str) -> None:
    """One forward pass of two rows (in eval mode, no random numbers drawn): the output shape the loop needs."""
    x_cat = torch.zeros((2, len(spec.cardinalities)), dtype=torch.int64)
    x_num = torch.zeros((2, spec.n_numeric), dtype=torch.float32)
    was_training = module.training
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        module.eval()
        try:
            out = module(x_cat, x_num)
        finally:
            module.train(was_training)
    want = (2,) if spec.output_size == 1 else (2, spec.output_size)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != want:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise plugin.PluginError(f"model.plugin {name!r}: forward(x_cat, x_num) of 2 rows gave {got}; a "
                                 f"{spec.task} model must give {want}")
