"""The online rule by simulation: how often it rolls back an equal candidate and a 10 % worse one.

Each simulated test draws labelled rows from known distributions: the champion's errors ``N(0, 1)``, the
candidate's ``(1 + effect) · (ρ e_champion + sqrt(1 - ρ²) z)`` with ``ρ = 0.8`` (a shadow scores the same rows as
the champion: the pairs are correlated; a canary answers its own ``share`` of the traffic: independent rows). The
metric is MAE, the limit the gate's tolerance. Labels arrive in ``LOOKS`` batches up to ``min_labelled`` rows of
the candidate, and after every batch the REAL rule (``online_rule.decide`` over ``online_labels.summarize``'s record,
``require_labels``) looks: it rolls back, waits, or promotes at ``min_labelled``. ``min_labelled`` is the one the
rule's own statement says detects a 10 % worse candidate with 95 % power, read from a pilot sample. The numeric
prediction-shift rule is simulated too: an equal candidate's predictions against the champion's.

A rate off its goal is a failed run (``bench.checks``): no figure. ``python -m bench.online_sim --smoke`` runs a
few hundred tests in seconds.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from bench.checks import expect
from bench.registry import Result, benchmark
from mlassets.core.config.serving import OnlineConfig
from mlassets.core.evaluate.online_labels import summarize
from mlassets.core.evaluate.online_rule import VariantStats, decide

RUNS, SMOKE_RUNS, LOOKS, RHO, WORSE = 2000, 300, 10, 0.8, 0.10
EQUAL_GOAL, WORSE_GOAL = 0.05, 0.95
RULE = OnlineConfig(min_requests=1, label_key=["id"], require_labels=True)


def _errors(rng: np.random.Generator, n: int, effect: float, paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """Absolute errors ``(candidate, champion)`` of ``n`` candidate rows (a canary's champion: ``n · 9`` rows)."""
    h = rng.standard_normal(n if paired else n * 9)
    base = RHO * h + np.sqrt(1 - RHO**2) * rng.standard_normal(n) if paired else rng.standard_normal(n)
    return np.abs((1 + effect) * base), np.abs(h)


def _labels(c: np.ndarray, h: np.ndarray, paired: bool) -> dict:
    return summarize("mae", h, c, (c, h) if paired else None)


def _served() -> dict:
    stats = VariantStats()
    stats.scored(1.0, [0.0, 1.0])
    return stats.summary()


SERVED = _served()  # the requests' side of the rule, equal for both variants: only the labels decide


def planned_rows(paired: bool, rng: np.random.Generator) -> int:
    """The least ``min_labelled`` whose statement detects a ``WORSE`` candidate with 95 % power (pilot of 20k)."""
    c, h = _errors(rng, 20_000, WORSE, paired)
    pilot = _labels(c, h, paired)
    low, high = 10, 100_000
    while low < high:
        mid = (low + high) // 2
        said = decide(SERVED, SERVED, dataclasses.replace(RULE, min_labelled=mid), pilot).figures
        low, high = (low, mid) if said["detectable_worse"] <= WORSE else (mid + 1, high)
    return low


def rollback_rate(effect: float, paired: bool, rule: OnlineConfig, runs: int, rng: np.random.Generator) -> float:
    """The share of ``runs`` simulated tests the rule rolled back, looking after each of ``LOOKS`` label batches."""
    n = rule.min_labelled
    cuts = np.linspace(n / LOOKS, n, LOOKS).astype(int)
    rolled = 0
    for _ in range(runs):
        c, h = _errors(rng, n, effect, paired)
        for cut in cuts:
            found = decide(SERVED, SERVED, rule, _labels(c[:cut], h[:cut * (1 if paired else 9)], paired))
            if found.outcome != "wait":
                rolled += found.outcome == "rollback"
                break
        else:
            raise AssertionError(f"the rule still waits at min_labelled {n}: {found.reason}")
    return rolled / runs


def shift_rate(runs: int, rng: np.random.Generator, rows: int = 400) -> float:
    """The share of equal candidates the prediction-shift rule rolls back (predictions ``N(3, 1)`` both)."""
    rule = OnlineConfig(min_requests=rows // 4)
    rolled = 0
    for _ in range(runs):
        champion, candidate = VariantStats(), VariantStats()
        for stats in (champion, candidate):
            for chunk in rng.normal(3.0, 1.0, (rows // 4, 4)):
                stats.scored(1.0, chunk)
        rolled += decide(champion.summary(), candidate.summary(), rule).outcome == "rollback"
    return rolled / runs


def simulate(runs: int, seed: int = 0) -> dict[str, float]:
    """Every rate, keyed ``<mode>_<equal|worse>`` and ``shift_equal``, with each mode's ``<mode>_rows``."""
    rng = np.random.default_rng(seed)
    out: dict[str, float] = {}
    for mode, paired in (("shadow", True), ("canary", False)):
        rule = dataclasses.replace(RULE, mode=mode, min_labelled=planned_rows(paired, rng))
        out[f"{mode}_rows"] = rule.min_labelled
        out[f"{mode}_equal"] = rollback_rate(0.0, paired, rule, runs, rng)
        out[f"{mode}_worse"] = rollback_rate(WORSE, paired, rule, runs, rng)
    out["shift_equal"] = shift_rate(runs, rng)
    return out


def checked(runs: int) -> dict[str, float]:
    """``simulate``, failing unless every rate meets its goal."""
    rates = simulate(runs)
    for mode in ("shadow", "canary"):
        expect(rates[f"{mode}_equal"] <= EQUAL_GOAL, f"{mode}: an equal candidate was rolled back in "
                                                      f"{rates[f'{mode}_equal']:.1%} of {runs} tests (goal <= 5%)")
        expect(rates[f"{mode}_worse"] >= WORSE_GOAL, f"{mode}: a 10% worse candidate was rolled back in "
                                                      f"{rates[f'{mode}_worse']:.1%} of {runs} tests at "
                                                      f"min_labelled {rates[f'{mode}_rows']:.0f} (goal >= 95%)")
    expect(rates["shift_equal"] <= EQUAL_GOAL, f"the shift rule rolled back {rates['shift_equal']:.1%} of equal "
                                               "candidates (goal <= 5%)")
    return rates


def _detail(rates: dict[str, float], runs: int) -> str:
    return (f"{runs} tests each; shadow (paired, min_labelled {rates['shadow_rows']:.0f}): equal "
            f"{rates['shadow_equal']:.1%}, 10% worse {rates['shadow_worse']:.1%}; canary (two-sample, min_labelled "
            f"{rates['canary_rows']:.0f}): equal {rates['canary_equal']:.1%}, 10% worse {rates['canary_worse']:.1%}; "
            f"equal shift {rates['shift_equal']:.1%}")


_RATES: dict[int, dict[str, float]] = {}


def _rates(runs: int) -> dict[str, float]:
    if runs not in _RATES:
        _RATES[runs] = checked(runs)
    return _RATES[runs]


@benchmark("online_rule_equal_rollback", goal="an equal candidate rolled back (worst of shadow, canary, shift)",
           better="lower", target=EQUAL_GOAL)
def equal_rollback() -> Result:
    rates = _rates(RUNS)
    worst = max(rates["shadow_equal"], rates["canary_equal"], rates["shift_equal"])
    return Result(value=worst, unit="share", detail=_detail(rates, RUNS))


@benchmark("online_rule_worse_rollback", goal="a 10% worse candidate rolled back (worst of shadow, canary)",
           better="higher", target=WORSE_GOAL)
def worse_rollback() -> Result:
    rates = _rates(RUNS)
    return Result(value=min(rates["shadow_worse"], rates["canary_worse"]), unit="share", detail=_detail(rates, RUNS))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_RUNS} tests per rate instead of {RUNS}")
    runs = SMOKE_RUNS if parser.parse_args().smoke else RUNS
    print(_detail(checked(runs), runs))
