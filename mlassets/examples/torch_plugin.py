"""``mlassets example torch-plugin DIR``: a model of your own, as a torch module, on the flights data.

Two files to copy: ``model.py`` (a builder that gets the feature spec and returns an ``nn.Module``) and
``flights_plugin.yaml`` (the shipped flights dataset, with ``model.family: torch`` and ``model.plugin`` pointing at
the builder). Everything else (torchrun, checkpoints and exact resume, telemetry, evaluation, the gate, the
registry, rebuilds) is the platform's.
"""

from __future__ import annotations

from pathlib import Path

MODEL = '''\
"""A tabular network with residual blocks: an mlassets torch plug-in (model.family: torch).

mlassets calls ``build(spec)`` on every rank with the same seed and trains the module it returns. ``spec`` holds
``cardinalities`` (one per categorical feature; index 0 is "unknown"), ``n_numeric``, ``output_size`` (1, or the
number of classes), ``task`` and ``params`` (the config's model.params). ``forward(x_cat, x_num)`` gets a
LongTensor [n, n_cat] and a FloatTensor [n, n_num] (standardized) and returns [n] (or [n, k] logits).
"""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.net(x)


class ResidualTabular(nn.Module):
    def __init__(self, cardinalities, n_numeric, output_size, width=64, depth=2, embedding_dim=8, dropout=0.1):
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(c, embedding_dim) for c in cardinalities)
        self.project = nn.Linear(len(cardinalities) * embedding_dim + n_numeric, width)
        self.blocks = nn.Sequential(*(Block(width, dropout) for _ in range(depth)))
        self.head = nn.Linear(width, output_size)

    def forward(self, x_cat: torch.Tensor, x_num: torch.Tensor) -> torch.Tensor:
        parts = [emb(x_cat[:, j]) for j, emb in enumerate(self.embeddings)] + [x_num]
        out = self.head(self.blocks(self.project(torch.cat(parts, dim=1))))
        return out.squeeze(1) if out.shape[1] == 1 else out


def build(spec) -> nn.Module:
    p = spec.params
    return ResidualTabular(spec.cardinalities, spec.n_numeric, spec.output_size, width=int(p.get("width", 64)),
                           depth=int(p.get("depth", 2)), embedding_dim=int(p.get("embedding_dim", 8)),
                           dropout=float(p.get("dropout", 0.1)))
'''

CONFIG_HEADER = """\
# The shipped flights dataset with a model of your own (mlassets example torch-plugin).
# model.plugin names the builder: path/to/file.py:function (from this file's folder) or package.module:function.
"""


def write_example(directory: str | Path) -> Path:
    """Write ``model.py`` and ``flights_plugin.yaml`` under ``directory``; return the config's path."""
    import yaml

    from mlassets.core.config import load_config, shipped_configs

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.py").write_text(MODEL)
    data = load_config(shipped_configs()["flights"]).to_dict()
    data["dataset"]["name"] = "flights_plugin"
    data["model"] = {"registered_name": "flights_arr_delay_plugin", "family": "torch", "plugin": "model.py:build",
                     "params": {"width": 64, "depth": 2, "embedding_dim": 8, "dropout": 0.1}}
    data["tuning"]["params"] = ["lr", "weight_decay"]
    config = out / "flights_plugin.yaml"
    config.write_text(CONFIG_HEADER + yaml.safe_dump(data, sort_keys=False))
    load_config(config)  # what it wrote loads
    return config
