"""Shared fixtures: an isolated embedded stack per test, small configs, distributed clean-up."""

from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch

from mlassets.core.config import PipelineConfig, load_config, shipped_configs

warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")


# Fixtures built once per session (a demo home, a PostgreSQL server, one MLflow store): under pytest-xdist every
# test that uses one runs in the same worker (``--dist loadgroup``), so each is built once, not once per worker; so do
# the tests of a module with a module-scoped fixture of its own (``_module_fixture``).
SHARED_FIXTURES = {"_demo_stack": "demo", "postgres": "postgres", "reg": "registry", "recorded": "dashboard"}


def _module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a module-scoped fixture of its own module (built once per worker that runs the module's
    tests: the module's tests stay in one worker, so it is built once)."""
    info = getattr(item, "_fixtureinfo", None)
    for name in info.names_closure if info is not None else ():
        defs = info.name2fixturedefs.get(name)
        if defs and defs[-1].scope == "module" and defs[-1].func.__module__ == item.module.__name__:
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        groups = [group for fixture, group in SHARED_FIXTURES.items() if fixture in item.fixturenames]
        if not groups and _module_fixture(item):
            groups = [f"module:{item.module.__name__}"]
        if groups:
            item.add_marker(pytest.mark.xdist_group(groups[0]))
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _destroy_process_group():
    yield
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def small_flights(sample: float = 0.2, **gate: object) -> PipelineConfig:
    """The shipped flights config on a deterministic sample of each month (small slices may gate)."""
    cfg = load_config(shipped_configs()["flights"])
    return dataclasses.replace(
        cfg,
        dataset=dataclasses.replace(cfg.dataset, sample_fraction=sample),
        gate=dataclasses.replace(cfg.gate, slice_min_rows=40, **gate),
    )


@pytest.fixture
def home(tmp_path, monkeypatch) -> str:
    """An empty embedded stack ($MLASSETS_HOME) for one test."""
    path = tmp_path / "mlassets-home"
    monkeypatch.setenv("MLASSETS_HOME", str(path))
    for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_PROFILE", "MLASSETS_CONFIGS", "MLASSETS_STORE",
                "MLASSETS_PROMOTION_DB", "MLASSETS_UI_URLS"):
        monkeypatch.delenv(var, raising=False)
    return str(path)

