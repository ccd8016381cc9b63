"""A session-wide end-to-end run of the pipeline on the embedded stack, shared by the e2e and UI tests."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import dagster as dg
import pytest

from mlassets.cli.demo import VersionRow
from mlassets.cli.demo import play as run_pipeline
from mlassets.core import tracking
from mlassets.core.config import PipelineConfig
from mlassets.core.registry import versions as registry
from mlassets.definitions import build_definitions
from mlassets.host.instance import get_instance
from mlassets.host.runs import ingest
from tests.conftest import small_flights

BROKEN = ("carrier=UA", 240.0)


@dataclass
class Demo:
    cfg: PipelineConfig
    home: str
    defs: dg.Definitions
    instance: dg.DagsterInstance
    rows: list[VersionRow]
    champions: list[str | None]  # champion version after each row
    old_urls: dict[str, str]  # the UI setting the demo's links were made under (no UI listens there)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def demo(_demo_stack: Demo, monkeypatch: pytest.MonkeyPatch) -> Demo:
    """The demo's stack, its environment set for this test only (other tests never see its home)."""
    monkeypatch.setenv("MLASSETS_HOME", _demo_stack.home)
    for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(var, raising=False)
    return _demo_stack


@pytest.fixture(scope="session")
def _demo_stack(tmp_path_factory) -> Iterator[Demo]:
    home = tmp_path_factory.mktemp("e2e-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLASSETS_HOME", str(home))
        mp.delenv("DAGSTER_HOME", raising=False)
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        old_urls = {kind: f"http://127.0.0.1:{_free_port()}" for kind in ("dagster", "mlflow", "dashboard")}
        (home / "ui.json").write_text(json.dumps(old_urls))  # as an `mlassets ui` on other ports left it
        cfg = small_flights(slice_max_regression=0.03)  # the platform default; the sample is small
        defs, instance = build_definitions([cfg]), get_instance()
        rows, champions = [], []
        for month, broken in (("2013-01", None), ("2013-02", None), ("2013-03", BROKEN)):
            corrupt, shift = broken or ("", 0.0)
            ingested = ingest(instance, cfg, month, corrupt=corrupt, shift=shift)
            rows.append(run_pipeline(instance, cfg, month, ingested.key, ingested.data_version))
            tracking.configure()
            champ = registry.alias_version(cfg.model.registered_name, registry.CHAMPION)
            champions.append(str(champ.version) if champ else None)
        yield Demo(cfg, str(home), defs, instance, rows, champions, old_urls)
        instance.dispose()
