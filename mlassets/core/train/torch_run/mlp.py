"""The built-in tabular network (family ``mlp``): per-column embeddings concatenated with numerics, then an MLP."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class TabularMLP(nn.Module):
    """Embeds each categorical column, concatenates the numeric features, and outputs one value (or k logits)."""

    def __init__(
        self,
        cardinalities: list[int],
        n_numeric: int,
        embedding_dim: int = 8,
        hidden: list[int] | None = None,
        dropout: float = 0.0,
        out_features: int = 1,
    ) -> None:
        super().__init__()
        hidden = [64, 32] if hidden is None else list(hidden)
        if any(c < 1 for c in cardinalities):
            raise ValueError(f"cardinalities must be >= 1, got {cardinalities}")
        if embedding_dim < 1 or any(h < 1 for h in hidden):
            raise ValueError(f"embedding_dim and hidden sizes must be >= 1: {embedding_dim}, {hidden}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.embeddings = nn.ModuleList(nn.Embedding(c, embedding_dim) for c in cardinalities)
        width = len(cardinalities) * embedding_dim + n_numeric
        if width == 0:
            raise ValueError("the model needs at least one categorical or numeric feature")
        layers: list[nn.Module] = []
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = size
        layers.append(nn.Linear(width, out_features))
        self.mlp = nn.Sequential(*layers)
        self.n_numeric = n_numeric

    def forward(self, x_cat: torch.Tensor, x_num: torch.Tensor) -> torch.Tensor:
        """``x_cat`` [n, n_cat] long, ``x_num`` [n, n_num] float -> predictions [n] (or logits [n, k])."""
        parts = [emb(x_cat[:, j]) for j, emb in enumerate(self.embeddings)]
        if self.n_numeric:
            parts.append(x_num)
        out = self.mlp(torch.cat(parts, dim=1))
        return out.squeeze(1) if out.shape[1] == 1 else out


def build_model(model_config: dict[str, Any], cardinalities: list[int], n_numeric: int,
                out_features: int = 1) -> TabularMLP:
    """The built-in network described by a ``ModelConfig`` dict (the ``mlp`` family)."""
    return TabularMLP(
        cardinalities,
        n_numeric,
        embedding_dim=int(model_config.get("embedding_dim", 8)),
        hidden=[int(h) for h in model_config.get("hidden", [64, 32])],
        dropout=float(model_config.get("dropout", 0.0)),
        out_features=out_features,
    )
