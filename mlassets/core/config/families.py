"""The model families' facts in one table: the only module that spells a family's name.

``model.family`` names a row. Its implementation (``mlassets.core.train.family.Family``: fit, save, load, predict,
search) is imported only when asked for; everything else the platform asks of a family (the config's rules,
tuning's defaults and search space, the lineage it records, the tag the UI shows, whether it warm-starts) it reads
here, as a fact of the row, and never compares ``model.family`` with a name. A plain table beside the config (it
imports no stage, like ``search``), so the config, tuning, training, the registry and the lineage all read it.

A new family is a row here, its implementation (``core/train/...``) and its test; ``FamilyName`` lists the names
for the config's type (the reference docs and the error for an unknown family read it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FamilyName = Literal["mlp", "torch", "lightgbm", "xgboost"]  # model.family: one row of FAMILIES each
DEFAULT: FamilyName = "mlp"  # model.family when the config names none; records written before families had one

NETWORK_TUNABLE = ("lr", "weight_decay", "dropout", "batch_size", "embedding_dim")  # tuning.params of a network
TREE_TUNABLE = ("num_leaves", "learning_rate", "min_child_samples", "feature_fraction")  # model.params.<name>
TUNABLE = NETWORK_TUNABLE + TREE_TUNABLE  # every name tuning.params may hold (config.search.SPACE's keys)


@dataclass(frozen=True)
class FamilyFacts:
    """One model family, as the rest of the platform sees it."""

    name: str
    implementation: str  # "module:class" of its ``Family``, built with these facts (no torch for trees, no trees
    # for torch: imported only when asked for)
    trees: bool  # boosted trees: one process, boosting rounds, checkpoints by rounds, trains from scratch; else a
    # network trained by the torch loop (torchrun ranks, epochs, checkpoints by steps or minutes, warm starts)
    library: str  # the package that runs its model: the trees' version is in the lineage and the logged model's
    # requirements, their device and MLflow flavor follow it
    searches: tuple[str, ...]  # its search space: what a study may search for it (tuning.params among these)
    tuned: tuple[str, ...]  # tuning.params when the config gives none (or [])
    plugin: bool = False  # builds the user's module from model.plugin (the record keeps its source's sha256)
    own_params: bool = True  # takes model.params (a plug-in's keyword arguments, the trees' checked table)
    cuda: bool = False  # may train on an NVIDIA GPU, where its library was built with CUDA

    @property
    def distributed(self) -> bool:
        """Trains under torchrun with ``training.nproc`` ranks; else in one process."""
        return not self.trees

    @property
    def warm_start(self) -> bool:
        """Can begin from a registered model of the same family (``automation.retrain: warm_start``)."""
        return not self.trees

    @property
    def tunable(self) -> tuple[str, ...]:
        """What ``tuning.params`` may name for this family at load (its kind's values)."""
        return TREE_TUNABLE if self.trees else NETWORK_TUNABLE

    @property
    def ui_kind(self) -> str:
        """The kind tag the Dagster UI shows on its training assets."""
        return self.library if self.trees else "pytorch"

    @property
    def trial_step(self) -> str:
        """What a study's trial reports the validation metric after: an epoch, or a report (every 10 rounds)."""
        return "report" if self.trees else "epoch"


_TORCH = "mlassets.core.train.torch_run.torch_nn"
_TREES = "mlassets.core.train.trees.gbdt:TreeFamily"
FAMILIES: dict[str, FamilyFacts] = {f.name: f for f in (
    FamilyFacts("mlp", f"{_TORCH}:MLPFamily", trees=False, library="torch", searches=NETWORK_TUNABLE,
                tuned=("lr", "weight_decay", "dropout"), own_params=False),
    FamilyFacts("torch", f"{_TORCH}:PluginFamily", trees=False, library="torch",
                searches=("lr", "weight_decay", "batch_size"), tuned=("lr", "weight_decay"), plugin=True),
    FamilyFacts("lightgbm", _TREES, trees=True, library="lightgbm", searches=TREE_TUNABLE, tuned=TREE_TUNABLE),
    FamilyFacts("xgboost", _TREES, trees=True, library="xgboost", searches=TREE_TUNABLE, tuned=TREE_TUNABLE,
                cuda=True),
)}


def facts_of(name: str) -> FamilyFacts:
    """The row of family ``name``; ValueError naming ``model.family`` and the families for another name."""
    if name not in FAMILIES:
        raise ValueError(f"model.family: {name!r} is not a model family (choose: {', '.join(FAMILIES)})")
    return FAMILIES[name]


def plugin_families() -> list[str]:
    """The families that build the user's module from ``model.plugin``."""
    return [f.name for f in FAMILIES.values() if f.plugin]
