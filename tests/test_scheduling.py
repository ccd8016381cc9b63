"""How ``make test`` groups and orders its pytest-xdist work units (``tests/scheduling.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from tests import scheduling


@dataclass
class _Item:
    nodeid: str
    keywords: set[str] = field(default_factory=set)
    fixturenames: tuple[str, ...] = ()


def _order(items: list[_Item]) -> list[str]:
    scheduling.order(cast(Any, items))
    return [i.nodeid for i in items]


def test_the_modules_sharing_a_session_fixture_are_one_unit_and_classes_stay_apart() -> None:
    demo = scheduling.SHARED_SESSION["_demo_stack"]
    assert len({scheduling.work_unit(f"{m}::test_x[a::b]") for m in demo}) == 1
    assert scheduling.work_unit("tests/bench/test_smoke.py::TestSmoke_a::test_b[x]") == \
        "tests/bench/test_smoke.py::TestSmoke_a"
    assert scheduling.work_unit("tests/core/test_a.py::test_b") == "tests/core/test_a.py"


def test_e2e_units_first_then_the_largest_each_module_in_its_order() -> None:
    items = [_Item("tests/a.py::t1"), _Item("tests/b.py::t1"), _Item("tests/b.py::t2"),
             _Item("tests/c.py::t1"), _Item("tests/c.py::t2", {"e2e"}), _Item("tests/d.py::t1", {"e2e"})]
    assert _order(items) == ["tests/c.py::t2", "tests/d.py::t1", "tests/c.py::t1",  # e2e units (c is one)
                             "tests/b.py::t1", "tests/b.py::t2", "tests/a.py::t1"]


def test_a_module_using_a_shared_fixture_unlisted_is_named() -> None:
    with pytest.raises(pytest.UsageError, match="tests/defs/test_new.py uses the session fixture _demo_stack"):
        _order([_Item("tests/defs/test_new.py::t", fixturenames=("demo", "_demo_stack"))])
