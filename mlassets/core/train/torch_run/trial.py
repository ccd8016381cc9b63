"""A tuning trial of a torch family: the training loop in this process (one rank), its validation metric reported
after every epoch (the reporter may raise to prune), checkpoints kept only while it runs."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from mlassets.core.config import PipelineConfig
from mlassets.core.train.objectives import VAL_METRIC
from mlassets.core.train.splits import Splits
from mlassets.core.train.torch_run import distributed as dd
from mlassets.core.train.torch_run.loader import as_tensors
from mlassets.core.train.torch_run.loop import Trainer


class _Sink:
    """The loop's metrics sink: each epoch's validation metric goes to ``report`` (train loss and telemetry not)."""

    def __init__(self, name: str, report: Callable[[int, float], None]) -> None:
        self.name, self.report = name, report

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        if self.name in metrics:
            self.report(step, float(metrics[self.name]))

    def close(self) -> None:
        return None


def fit_torch_trial(cfg: PipelineConfig, splits: Splits, out_dir: Path, data_version: str,
                    report: Callable[[int, float], None]) -> float:
    """Train one trial; its best epoch's validation metric."""
    tr = cfg.training
    env = dd.setup(tr)
    try:
        with dd.deterministic(tr.seed, tr.threads, env.device):
            trainer = Trainer(cfg, as_tensors(splits), env, out_dir, lambda msg: None,
                              _Sink(f"val_{VAL_METRIC[cfg.dataset.task]}", report), data_version, attempt=1)
            try:
                trainer.fit()
            finally:
                trainer.checkpointer.close()
        return min(point["val_metric"] for point in trainer.progress.curves)
    finally:
        dd.teardown(env)
        shutil.rmtree(out_dir, ignore_errors=True)
