"""The job spec and fleet.yaml are checked at load naming the key and value; admission refuses with the numbers."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from mlassets.core.config import ConfigError, load_config, parse_config
from mlassets.core.config.load import shipped_configs
from mlassets.core.diagnose.cost import SOURCE_PRESET
from mlassets.core.fleet.admission import money
from mlassets.core.fleet.config import SHIPPED, load_fleet, parse_fleet
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
    ({"teams": {"research": {"gpu_quota": 4, "budget": 1.0, "borrowing_limit": {"cheap": 1}}}},
     "teams.research.borrowing_limit.cheap: 'cheap' is not a capacity (spot, on-demand)"),
    ({"teams": {"research": {"gpu_quota": 4, "budget": 1.0, "borrowing_limit": {"spot": 5}}}},
     "teams.research.borrowing_limit.spot: must be between 0 and the team's gpu_quota 4, got 5"),
    ({"teams": {"research": {"gpu_quota": 4, "budget": 1.0, "borrowing_limit": {"spot": 1.5}}}},
     "teams.research.borrowing_limit.spot: expected an integer, got 1.5"),
    ({"kubernetes": {"cpu_per_gpu": 0}}, "kubernetes.cpu_per_gpu: must be >= 1, got 0"),
    ({"kubernetes": {"namespace": "ML Assets"}}, "kubernetes.namespace: 'ML Assets' is not a name"),
])
def test_a_bad_fleet_names_the_key_and_the_value(tmp_path: Path, patch: dict, message: str) -> None:
    data = {**yaml.safe_load(SHIPPED.read_text()), **patch}
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=re.escape(message)):
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


@pytest.mark.parametrize(("over", "message"), [
    ({"ranks": 9999999999999}, "fleet.ranks: 9999999999999 is out of range (a whole number from 1 to 65536)"),
    ({"gpus_per_rank": 65}, "fleet.gpus_per_rank: 65 is out of range"),
    ({"expected_minutes": 1e9}, "fleet.expected_minutes: 1000000000.0 is out of range"),
    ({"checkpoint_every_minutes": float("nan")}, "training.checkpoint_every_minutes: nan is out of range"),
])
def test_numbers_past_the_job_spec_ranges_are_refused_before_the_lease_table(cfg, over: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        job_spec(cfg, over)
    tags = job_spec(cfg).tags()
    tags["mlassets/fleet.ranks"] = "9999999999999"
    with pytest.raises(ConfigError, match="run tag mlassets/fleet.ranks: 9999999999999 is out of range"):
        from_tags(tags)


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
    ({"ranks": 2, "capacity": "on-demand", "team": "limited"},
     "needs 2 GPUs (2 ranks x 1) but team limited may hold at most 1 of on-demand (teams.limited.borrowing_limit)"),
    ({"ranks": 2, "expected_minutes": 300.0, "capacity": "on-demand", "team": "product"},
     "the job costs ₹2,500 (2 GPUs x 5 h x ₹250 per GPU-hour, on-demand); team product has ₹0 spent or reserved "
     "of its ₹1,000 budget"),
])
def test_refusals_give_the_numbers_fast_and_start_nothing(cfg, tmp_path: Path, over: dict, sentence: str) -> None:
    data = yaml.safe_load(SHIPPED.read_text())
    data["teams"]["limited"] = {"gpu_quota": 2, "budget": 100.0, "borrowing_limit": {"on-demand": 1}}
    table, fleet = FleetTable(tmp_path / "fleet.db"), parse_fleet(data)
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


@pytest.mark.parametrize(("value", "text"), [(0.45, "$0.45"), (5000.0, "$5,000"), (100 / 3, "$33.33"),
                                             (1234567.891, "$1,234,567.89"), (0.0, "$0"), (2.999, "$3")])
def test_money_keeps_the_cents_a_whole_unit_would_hide(value: float, text: str) -> None:
    fleet = parse_fleet({**yaml.safe_load(SHIPPED.read_text()), "currency": "$"})
    assert money(fleet, value) == text
