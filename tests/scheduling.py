"""How ``make test`` spreads the suite over its pytest-xdist workers (``-n 2 --dist loadscope``).

A work unit is a module, or a class, except that the modules sharing an expensive session fixture
(``SHARED_SESSION``) are one unit: a session fixture is built once per worker that uses it, so modules split over
two workers built it twice (the demo stack alone takes some 40 s). The units are ordered long first: every unit
with an ``e2e`` test, then the others, the largest first, so that the workers' last minutes hold short units and
end together. ``make test`` passes ``--no-loadscope-reorder``: by default pytest-xdist sorts the units by their
number of tests, which put the one-test e2e modules (the PostgreSQL soak among them) last.
"""

from __future__ import annotations

from collections import Counter

import pytest

# session fixture -> the modules that use it (directly or through another fixture): one work unit
SHARED_SESSION: dict[str, tuple[str, ...]] = {
    "_demo_stack": ("tests/defs/test_pipeline_e2e.py", "tests/defs/test_browser_story.py", "tests/defs/test_ui.py",
                    "tests/defs/test_run_origin.py"),
    "production_run": ("tests/production/test_pipeline_postgres.py", "tests/production/test_secrets.py"),
    "recorded": ("tests/dashboard/test_browser.py", "tests/dashboard/test_fleet_page.py",
                 "tests/dashboard/test_models_table.py", "tests/dashboard/test_pages.py"),
}
_UNIT = {module: f"{modules[0]} (with the other users of {fixture})" for fixture, modules in SHARED_SESSION.items()
         for module in modules}


def work_unit(nodeid: str) -> str:
    """The work unit of a test: its module or class (pytest-xdist's ``loadscope``), or its group of
    ``SHARED_SESSION``."""
    scope = nodeid.rsplit("::", 1)[0]
    return _UNIT.get(scope.split("::")[0], scope)


def order(items: list[pytest.Item]) -> None:
    """Sort ``items`` in place, long units first (a stable sort: each module's order is kept); ``UsageError`` when a
    module uses a fixture of ``SHARED_SESSION`` without being listed there."""
    for item in items:
        module = item.nodeid.split("::")[0]
        for fixture, modules in SHARED_SESSION.items():
            if fixture in getattr(item, "fixturenames", ()) and module not in modules:
                raise pytest.UsageError(f"{module} uses the session fixture {fixture}: add it to "
                                        f"SHARED_SESSION[{fixture!r}] in tests/scheduling.py (one worker builds it)")
    items.sort(key=lambda item: "e2e" not in item.keywords)
    sizes = Counter(work_unit(item.nodeid) for item in items)
    long = {work_unit(item.nodeid) for item in items if "e2e" in item.keywords}
    items.sort(key=lambda item: (0, 0) if work_unit(item.nodeid) in long else (1, -sizes[work_unit(item.nodeid)]))


def make_scheduler(config: pytest.Config, log: object) -> object | None:
    """pytest-xdist's ``loadscope`` scheduling with ``work_unit`` as its unit (None for another ``--dist``)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return Scheduling(config, log)
