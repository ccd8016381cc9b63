"""The family table is the one home of a model family's facts: no other module spells a family's name.

Every string constant in ``mlassets/`` (a comparison, a default, a dict key, a message's whole text) that equals a
family name fails here unless it is in ``mlassets/core/config/families.py``; what another module needs to know about
a family it reads from the family's row. The few constants that are the same word for something else are allowed
by file, each with why.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest
import yaml

from mlassets.core.config import ConfigError, ModelConfig, parse_config, shipped_configs
from mlassets.core.config.families import DEFAULT, FAMILIES, TUNABLE, FamilyName, facts_of, plugin_families
from mlassets.core.config.search import SPACE

PACKAGE = Path(__file__).resolve().parents[3] / "mlassets"
TABLE = PACKAGE / "core" / "config" / "families.py"
ALLOWED = {  # (file under mlassets/, the constant): why it is not a family's name there
    ("core/train/checkpoint/manager.py", "torch"): "the torch package, a class the checkpoint reader may rebuild",
    ("core/train/checkpoint/state.py", "torch"): "the key of torch's RNG state in a checkpoint",
    ("examples/torch_plugin.py", "torch"): "an example config, written as a user writes one",
}


def _names_outside_the_table(package: Path, names: set[str], allowed: dict | None = None) -> list[str]:
    found, allowed = [], ALLOWED if allowed is None else allowed
    for path in sorted(package.rglob("*.py")):
        if path == TABLE:
            continue
        where = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in names
                    and (where, node.value) not in allowed):
                found.append(f"{where}:{node.lineno} {node.value!r}")
    return found


def test_no_module_but_the_table_spells_a_family_name() -> None:
    found = _names_outside_the_table(PACKAGE, set(FAMILIES))
    assert not found, ("family names outside mlassets/core/config/families.py (read the family's row instead):\n"
                       + "\n".join(found))


def test_every_allowed_constant_is_still_there() -> None:
    """An entry whose constant has gone is removed, so the list stays the short one it is."""
    found = _names_outside_the_table(PACKAGE, set(FAMILIES), allowed={})
    assert {(line.split(":")[0], line.split(" ")[1].strip("'")) for line in found} == set(ALLOWED)


def test_the_check_sees_a_name_in_a_comparison_and_a_default(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('def f(family="mlp"):\n    return family in ("lightgbm", "xgboost")\n')
    (tmp_path / "b.py").write_text('MESSAGE = "a family such as mlp"\n')  # a name inside a text is no comparison
    assert _names_outside_the_table(tmp_path, set(FAMILIES)) == ["a.py:1 'mlp'", "a.py:2 'lightgbm'",
                                                                 "a.py:2 'xgboost'"]


def test_the_table_has_one_row_per_config_name_and_the_config_reads_it() -> None:
    assert tuple(FAMILIES) == typing.get_args(FamilyName)
    assert typing.get_type_hints(ModelConfig)["family"] == FamilyName
    assert ModelConfig("m").family == DEFAULT
    assert set(TUNABLE) == set(SPACE)
    for facts in FAMILIES.values():
        assert facts.name and set(facts.tuned) <= set(facts.searches) <= set(facts.tunable) <= set(TUNABLE)
        assert ":" in facts.implementation


def test_an_unknown_family_is_named_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"model\.family: 'catboost' is not a model family \(choose: mlp, torch"):
        facts_of("catboost")


def _config(family: str, **model: object) -> dict:
    data = yaml.safe_load(shipped_configs()["flights"].read_text())
    data["model"] = {"registered_name": "m", "family": family, **model}
    return data


def test_config_rules_read_the_facts() -> None:
    """The rules the table drives give the messages they gave when they named the families."""
    assert plugin_families() == ["torch"]
    with pytest.raises(ConfigError, match="model.plugin: family 'torch' needs the builder of your module, "
                                          "package.module:function or path/to/file.py:function"):
        parse_config(_config("torch"))
    with pytest.raises(ConfigError, match="model.plugin: 'a:b' is for family 'torch'; family 'xgboost' takes none"):
        parse_config(_config("xgboost", plugin="a:b"))
    with pytest.raises(ConfigError, match="model.params.width: family 'mlp' takes embedding_dim, hidden and dropout"):
        parse_config(_config("mlp", params={"width": 3}))
    for family, tuned in (("mlp", ["lr", "weight_decay", "dropout"]), ("torch", ["lr", "weight_decay"]),
                          ("lightgbm", list(FAMILIES["lightgbm"].searches))):
        extra = {"plugin": "a.b:c"} if family == "torch" else {}
        assert parse_config(_config(family, **extra)).tuning.params == tuned
