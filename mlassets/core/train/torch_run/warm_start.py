"""A warm start: a new network begins from a registered model's weights instead of its seeded initialization.

The new training split has its own vocabularies (a new category, a category gone), so embedding rows are
copied by category name: a category both know keeps its learned row, a new one keeps its seeded row, and the
unknown row (index 0) is copied. Every other tensor of the same shape is copied; one whose shape changed (a
different ``model.hidden``) keeps its seeded values, and the caller is told which.
"""

from __future__ import annotations

import torch

from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.artifact import ModelBundle


def mapped_state(bundle: ModelBundle, pre: Preprocessor, module: torch.nn.Module
                 ) -> tuple[dict[str, torch.Tensor], list[str]]:
    """``module``'s state with ``bundle``'s weights mapped onto it, and the names of tensors left as seeded."""
    state = {k: v.clone() for k, v in module.state_dict().items()}
    old = bundle.model.state_dict()
    kept: list[str] = []
    old_columns = bundle.preprocessor.categorical
    for j, column in enumerate(pre.categorical):
        name = f"embeddings.{j}.weight"
        source = old[f"embeddings.{old_columns.index(column)}.weight"] if column in old_columns else None
        if source is None or source.shape[1] != state[name].shape[1]:
            kept.append(name)
            continue
        vocab = bundle.preprocessor.vocab[column]
        state[name][0] = source[0]
        for category, index in pre.vocab[column].items():
            if category in vocab:
                state[name][index] = source[vocab[category]]
    for name, tensor in old.items():
        if name.startswith("embeddings."):
            continue
        if name in state and state[name].shape == tensor.shape:
            state[name] = tensor.clone()
        elif name in state:
            kept.append(name)
    return state, kept
