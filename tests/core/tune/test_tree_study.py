"""Tuning boosted trees: the family's own search space (leaves, learning rate, rows per leaf, feature fraction) on
the validation split, reported every few rounds to the pruner; the best values enter model.params."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlassets.core.config import parse_config
from mlassets.core.config.families import TREE_TUNABLE
from mlassets.core.train.synthetic import write_splits
from mlassets.core.tune.apply import effective_config
from mlassets.core.tune.space import SPACE
from mlassets.core.tune.study import run_study
from tests.core.train.trees import tree_config

ROUNDS, TRIALS = 60, 8


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_a_tree_study_searches_the_family_space_and_prunes(family: str, home: str, tmp_path: Path) -> None:
    data = tree_config(family, {"rounds": ROUNDS, "early_stopping_rounds": 0})
    data["tuning"].update({"trials": TRIALS, "seed": 0, "apply": True})
    cfg = parse_config(data)
    assert cfg.tuning.params == list(TREE_TUNABLE)  # the family's default, not the network's lr/weight_decay/dropout
    train, validation = write_splits(tmp_path / "data", 2000, 500)
    tuned = run_study(cfg, train, validation, "v1", tmp_path / "trials")
    print(f"{family}: {tuned.trials_complete} complete, {tuned.trials_pruned} pruned in {tuned.seconds} s; best "
          f"{tuned.values} -> val_mae {tuned.best_value:.3f}")
    complete = [t for t in tuned.trials if t.state == "COMPLETE"]
    pruned = [t for t in tuned.trials if t.state == "PRUNED"]
    assert complete and pruned and len(complete) + len(pruned) == TRIALS
    assert all(t.epochs == ROUNDS // 10 - 1 for t in complete)  # a report every 10 rounds, but after the last
    assert all(t.epochs < ROUNDS // 10 and t.value is None for t in pruned)
    for name, value in tuned.values.items():
        space = SPACE[name]
        assert space.section == "params" and space.low <= value <= space.high
        assert isinstance(value, int) == space.integer, (name, value)
    applied = effective_config(cfg, tuned)
    assert {k: applied.model.params[k] for k in TREE_TUNABLE} == tuned.values
    assert applied.model.params["rounds"] == ROUNDS  # what was not searched stays as configured
