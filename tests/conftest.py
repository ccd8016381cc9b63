"""Shared fixtures: an isolated embedded stack per test, small configs, distributed clean-up."""

from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch

from mlassets.core.config import PipelineConfig, load_config, shipped_configs
from tests import scheduling

warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")


# ``make test`` runs pytest-xdist with ``--dist loadscope``: a module's tests run in one worker, in order, so a
# module-scoped fixture is built once and its tests may build on each other. (``--dist loadgroup`` with
# ``xdist_group`` marks added here did not group anything under pytest 9: pytest-xdist 3.8 appends the group to
# ``item._nodeid``, which pytest 9 no longer reads.) A session fixture is built once per worker that uses it: the
# modules that share one are one work unit (``tests/scheduling.py``, through pytest-xdist's scheduler hook).


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scheduling.order(items)  # long work units first, so that the workers end together
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    return scheduling.make_scheduler(config, log)  # the modules sharing a session fixture: one work unit


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

