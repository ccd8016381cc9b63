"""The job spec and fleet.yaml are checked at load naming the key and value; admission refuses with the numbers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from mlassets.core.config import ConfigError, load_config, parse_config
from mlassets.core.config.load import shipped_configs
from mlassets.core.diagnose.cost import SOURCE_PRESET
from mlassets.core.fleet.config import SHIPPED, load_fleet
from mlassets.core.fleet.service import submit, view
from mlassets.core.fleet.spec import PRIORITY_TAG, from_tags, job_spec
from mlassets.core.fleet.table import FleetTable


@pytest.fixture
def cfg():
    return load_config(shipped_configs()["flights"])


def test_shipped_fleet_loads_and_prices_like_the_cost_model() -> None:
    fleet = load_fleet(SHIPPED)
    assert fleet.gpus("spot") == 2 and fleet.gpus("on-demand") == 2 and fleet.gpus("spot-first") == 4
    assert fleet.pools["on-demand"].price_per_gpu_hour == SOURCE_PRESET.price_per_gpu_hour
    spot = SOURCE_PRESET.price_per_gpu_hour * (1 - SOURCE_PRESET.spot_discount)
    assert fleet.pools["spot"].price_per_gpu_hour == pytest.approx(spot)


@pytest.mark.parametrize(("patch", "message"), [
    ({"pools": {"spot": {"gpus": 0, "capacity": "spot", "price_per_gpu_hour": 1.0}}}, "pools.spot: gpus must be"),
    ({"pools": {"spot": {"gpus": 2, "capacity": "cheap", "price_per_gpu_hour": 1.0}}}, "pools.spot.capacity: 'cheap'"),
    ({"priority_classes": {"batch": {"value": 1}, "urgent": {"value": 5, "preempts": ["nope"]}}},
     "priority_classes.urgent.preempts: 'nope'"),
    ({"teams": {"Research": {"gpu_quota": 1, "budget": 1.0}}}, "teams.Research: 'Research' is not a name"),
    ({"lease": {"seconds": 5, "heartbeat_s": 10}}, "lease: seconds (5"),
    ({"colour": "red"}, "colour: unknown key"),
])
def test_a_bad_fleet_names_the_key_and_the_value(tmp_path: Path, patch: dict, message: str) -> None:
    data = {**yaml.safe_load(SHIPPED.read_text()), **patch}
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        load_fleet(path)


def test_job_spec_from_the_config_with_overrides_and_back_from_tags(cfg) -> None:
    data = cfg.to_dict()
    data["fleet"] = {"team": "research", "priority": "batch", "gpus_per_rank": 2, "capacity": "spot"}
    data["training"]["nproc"] = 2
    spec = job_spec(parse_config(data))
    assert (spec.team, spec.ranks, spec.gpus, spec.capacity) == ("research", 2, 4, "spot")
    urgent = job_spec(parse_config(data), {"priority": "urgent", "ranks": 1, "checkpoint_every_minutes": 5.0})
    assert (urgent.priority, urgent.gpus, urgent.checkpoint_every_minutes) == ("urgent", 2, 5.0)
    tags = urgent.tags(load_fleet(SHIPPED))
    assert tags[PRIORITY_TAG] == "1000" and tags["mlassets/team"] == "research"
    assert from_tags(tags) == urgent


@pytest.mark.parametrize(("section", "message"), [
    ({"capacity": "cheap"}, "fleet.capacity: 'cheap' is not one of"),
    ({"gpus_per_rank": 0}, "fleet.gpus_per_rank: must be >= 1, got 0"),
    ({"team": "R&D"}, "fleet.team: 'R&D' is not a name"),
    ({"expected_minutes": -1}, "fleet.expected_minutes: must be > 0, got -1"),
])
def test_a_bad_job_spec_fails_at_load_naming_the_key(cfg, section: dict, message: str) -> None:
    data = cfg.to_dict()
    data["fleet"] = section
    with pytest.raises(ConfigError, match=message):
        parse_config(data)
    with pytest.raises(ConfigError, match=message):
        job_spec(cfg, section)


def _spec(cfg, **over):
    return job_spec(cfg, {"team": "research", "checkpoint_every_minutes": 10.0, **over})


@pytest.mark.parametrize(("over", "sentence"), [
    ({"ranks": 4, "gpus_per_rank": 2},
     "needs 8 GPUs (4 ranks x 2) but the largest pool of capacity spot-first has 2 GPUs (4 in all"),
    ({"ranks": 2, "capacity": "spot", "team": "product", "gpus_per_rank": 2},
     "needs 4 GPUs (2 ranks x 2) but the largest pool of capacity spot has 2 GPUs"),
    ({"ranks": 2, "team": "default"}, "needs 2 GPUs (2 ranks x 1) but team default's quota is 1 GPUs"),
    ({"expected_minutes": 120.0, "checkpoint_every_minutes": 0.0},
     "expected to run 120 min, over the 60 min above which checkpoints are mandatory"),
    ({"ranks": 4, "expected_minutes": 180.0, "capacity": "on-demand", "team": "product"},
     "the largest pool of capacity on-demand has 2 GPUs"),
    ({"ranks": 2, "expected_minutes": 300.0, "capacity": "on-demand", "team": "product"},
     "the job costs ₹2,500 (2 GPUs x 5 h x ₹250 per GPU-hour, on-demand); team product has ₹0 spent or reserved "
     "of its ₹1,000 budget"),
])
def test_refusals_give_the_numbers_fast_and_start_nothing(cfg, tmp_path: Path, over: dict, sentence: str) -> None:
    table, fleet = FleetTable(tmp_path / "fleet.db"), load_fleet(SHIPPED)
    started = time.perf_counter()
    job_id, decision = submit(table, fleet, "big", _spec(cfg, **over), ["false"])
    assert time.perf_counter() - started < 1.0  # the bound (a generous one for a few sqlite writes)
    assert not decision.admitted and sentence in decision.reason
    assert table.job(job_id)["state"] == "refused" and view(table, fleet).queue == []


def test_the_budget_counts_what_the_team_already_reserved(cfg, tmp_path: Path) -> None:
    table, fleet = FleetTable(tmp_path / "fleet.db"), load_fleet(SHIPPED)
    one_hour = _spec(cfg, team="product", ranks=2, capacity="on-demand", expected_minutes=60.0)  # ₹500 each
    assert submit(table, fleet, "a", one_hour, ["true"])[1].admitted
    assert submit(table, fleet, "b", one_hour, ["true"])[1].admitted
    job_id, third = submit(table, fleet, "c", one_hour, ["true"])
    assert not third.admitted and "team product has ₹1,000 spent or reserved of its ₹1,000 budget" in third.reason
    assert [t["reserved"] for t in view(table, fleet).teams if t["team"] == "product"] == [1000.0]
