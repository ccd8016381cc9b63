"""The online rule's simulation benchmark at its smoke size: the real rule meets both goals, and a rule that
misses one makes the benchmark fail (no figure)."""

from __future__ import annotations

import pytest

from bench import online_sim
from bench.checks import WorkFailed
from mlassets.core.evaluate.online_rule import Decision


def test_the_real_rule_meets_both_goals_at_the_smoke_size() -> None:
    rates = online_sim.checked(online_sim.SMOKE_RUNS)
    for mode in ("shadow", "canary"):
        assert rates[f"{mode}_equal"] <= 0.05 and rates[f"{mode}_worse"] >= 0.95
        assert rates[f"{mode}_rows"] > 100  # the rows the statement asks for a 10 % regression
    assert rates["shadow_rows"] < rates["canary_rows"]  # pairs see more per row than split traffic


def test_a_rule_that_never_rolls_back_fails_the_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    real = online_sim.decide

    def lenient(champion, candidate, rule, labels=None):  # noqa: ANN001, ANN202
        found = real(champion, candidate, rule, labels)
        return Decision("promote", "lenient", found.figures) if found.outcome == "rollback" else found

    monkeypatch.setattr(online_sim, "decide", lenient)
    with pytest.raises(WorkFailed, match="a 10% worse candidate was rolled back in 0.0% of 20 tests"):
        online_sim.checked(20)
