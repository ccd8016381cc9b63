"""The gate's rules are registered once (``mlassets.core.evaluate.gate.RULES``), each with the ``GateConfig`` keys
that set its limits: a key without a rule, or a rule naming a key the config lacks, fails here."""

from __future__ import annotations

import dataclasses

import pytest

from mlassets.core.config import ConfigError, GateConfig
from mlassets.core.evaluate.gate import GENERAL_KEYS, RULES, evaluate_gate
from mlassets.core.evaluate.record import Evaluation, PredictionStats, SliceRow

FIELDS = {f.name for f in dataclasses.fields(GateConfig)}


def test_every_gate_key_is_read_by_a_registered_rule_or_said_to_be_general():
    keys = {key for registered in RULES for key in registered.keys}
    assert FIELDS - keys - set(GENERAL_KEYS) == set(), "a GateConfig key no registered rule reads"
    assert keys - FIELDS == set(), "a rule's key that GateConfig lacks"
    assert set(GENERAL_KEYS) - FIELDS == set() and not keys & set(GENERAL_KEYS)


def evaluation(champion: bool, baseline: float | None = None) -> Evaluation:
    """A multiclass record that measured everything a rule can judge: a slice value big enough to judge and one too
    small, latency against the champion and alone, size and calibration."""
    metrics = {"logloss": 0.5}
    slices = [SliceRow(slice="island", value=v, n=n, candidate=metrics, champion=metrics if champion else None,
                       change=0.0, ci_low=-0.1, ci_high=0.1) for v, n in (("a", 500), ("b", 5))]
    perf = {"single_median_ms": 1.0, "latency_rounds": 15, "size_bytes": 1000,
            **({"vs_champion_change": 0.0, "vs_champion_ci_low": -0.1, "vs_champion_ci_high": 0.1} if champion
               else {})}
    return Evaluation(task="multiclass", main_metric="logloss", holdout_rows=505, candidate=metrics,
                      champion=metrics if champion else None, slices=slices, confidence=0.95,
                      predictions=PredictionStats(n=505, non_finite=0, outside_range=0, range_min=0.0, range_max=1.0,
                                                  seen_min=0.0, seen_max=1.0),
                      performance={"candidate": perf}, calibration={"candidate": {"ece": 0.01}},
                      baseline=None if baseline is None else {"logloss": baseline})


def registered_name(result_name: str) -> str:
    return "slice" if result_name.startswith("slice ") else result_name


@pytest.mark.parametrize(("cfg", "record"), [
    (GateConfig(main_metric="logloss"), evaluation(champion=True)),
    (GateConfig(main_metric="logloss", absolute_max_metric=1.0), evaluation(champion=False)),
    (GateConfig(main_metric="logloss"), evaluation(champion=False, baseline=0.7)),
], ids=["champion", "first-absolute", "first-baseline"])
def test_each_rule_gives_only_the_names_it_registers(cfg: GateConfig, record: Evaluation):
    for registered in RULES:
        names = {registered_name(r.name) for r in registered.judge(cfg, record)}
        assert names <= set(registered.names), registered.names


def test_the_registered_names_are_every_name_a_gate_result_carries():
    cfg = GateConfig(main_metric="logloss")
    seen = {registered_name(r.name)
            for c, record in ((cfg, evaluation(True)), (dataclasses.replace(cfg, absolute_max_metric=1.0),
                                                        evaluation(False)), (cfg, evaluation(False, 0.7)))
            for r in evaluate_gate(c, record).rules}
    names = [name for registered in RULES for name in registered.names]
    assert len(names) == len(set(names)) and seen == set(names)
    result = evaluate_gate(cfg, evaluation(True))
    assert [u.value for u in result.unjudged] == ["b"] and result.passed


@pytest.mark.parametrize(("key", "value", "message"), [
    ("tolerance", -0.5, "gate.tolerance: must be >= 0, got -0.5"),
    ("slice_min_rows", 0, "gate.slice_min_rows: must be >= 1, got 0"),
    ("confidence", 1.0, "gate.confidence: must be between 0 and 1 (e.g. 0.95), got 1.0"),
    ("max_size_mb", 0.0, "gate.max_size_mb: must be > 0, got 0.0"),
    ("prediction_min", 5.0, "gate.prediction_min: 5 must be below gate.prediction_max 1"),
])
def test_the_gate_section_checks_its_own_ranges_however_it_is_built(key: str, value: object, message: str):
    """Not only at load: a GateConfig built or replaced in code is refused the same way."""
    with pytest.raises(ConfigError) as err:
        dataclasses.replace(GateConfig(prediction_max=1.0), **{key: value})
    assert str(err.value) == message
