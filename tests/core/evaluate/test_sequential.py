"""Always-valid intervals on a difference of means: they cover the truth at every look at once (where a fixed-n
interval looked at as often does not), catch a clearly worse candidate and keep an equal one."""

from __future__ import annotations

import numpy as np
import pytest

from mlassets.core.evaluate import sequential
from mlassets.core.evaluate.sequential import PairSums, Sums

ALPHA, PLANNED = 0.05, 500
LOOKS = np.arange(10, 1001, 10)  # a look after every 10 rows, 100 looks


def _ever_excludes(run: np.random.Generator, paired: bool, fixed_n: bool) -> bool:
    """Whether an interval, looked at after every 10 of 1000 rows, ever excluded the true difference (0)."""
    h = run.exponential(1.0, 1000)  # skewed, as losses are
    c = 0.7 * h + run.exponential(0.3, 1000) if paired else run.exponential(1.0, 1000)  # same mean as h
    for n in LOOKS:
        if paired:
            found = sequential.paired(PairSums.of(c[:n], h[:n]), 1.0, 1.0, PLANNED, ALPHA)
        else:
            found = sequential.two_sample(Sums.of(c[:n]), Sums.of(h[:n]), 1.0, 1.0, PLANNED, ALPHA)
        assert found is not None
        half = 1.96 * found.se if fixed_n else found.high - found.estimate
        if abs(found.estimate) > half:
            return True
    return False


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "two_sample"])
def test_the_interval_covers_the_truth_at_every_look_where_a_fixed_n_one_does_not(paired: bool) -> None:
    runs = 600
    rng = np.random.default_rng(7)
    always = sum(_ever_excludes(np.random.default_rng(rng.integers(2**32)), paired, False) for _ in range(runs))
    rng = np.random.default_rng(7)
    naive = sum(_ever_excludes(np.random.default_rng(rng.integers(2**32)), paired, True) for _ in range(runs))
    assert always / runs <= ALPHA  # on the same 600 runs, 100 looks each
    assert naive / runs > 3 * ALPHA  # the fixed-n 95 % interval, looked at as often, errs far more


def test_a_clearly_worse_candidate_is_caught_and_an_equal_one_kept() -> None:
    rng = np.random.default_rng(3)
    h = np.abs(rng.standard_normal(3000))
    worse = 1.2 * np.abs(0.8 * h + 0.6 * rng.standard_normal(3000))  # 20 % worse, correlated with the champion
    equal = np.abs(0.8 * h + 0.6 * rng.standard_normal(3000))
    caught = sequential.paired(PairSums.of(worse, h), 1.01, 1.0, PLANNED, ALPHA)
    kept = sequential.paired(PairSums.of(equal, h), 1.01, 1.0, PLANNED, ALPHA)
    assert caught is not None and caught.worse and caught.low > 0.05 * h.mean()
    assert kept is not None and not kept.worse and kept.low < 0 < kept.high
    apart = sequential.two_sample(Sums.of(worse), Sums.of(np.abs(rng.standard_normal(9000))), 1.01, 1.0, PLANNED,
                                  ALPHA)
    assert apart is not None and apart.worse
    # higher is better (sign -1): a lower hit rate is "worse"
    hits_h, hits_c = (rng.random(4000) < 0.8).astype(float), (rng.random(4000) < 0.6).astype(float)
    assert sequential.two_sample(Sums.of(hits_c), Sums.of(hits_h), 0.99, -1.0, PLANNED, ALPHA).worse
    assert not sequential.two_sample(Sums.of(hits_h), Sums.of(hits_c), 0.99, -1.0, PLANNED, ALPHA).worse


def test_the_detectable_effect_is_caught_with_about_its_power_at_the_planned_rows() -> None:
    rng = np.random.default_rng(11)
    pilot = sequential.two_sample(Sums.of(rng.exponential(1.0, 20_000)), Sums.of(rng.exponential(1.0, 20_000)), 1.0,
                                  1.0, PLANNED, ALPHA)
    assert pilot is not None
    effect = sequential.detectable(pilot, PLANNED, ALPHA)  # in D's units, for a candidate of the same spread
    caught = sum(sequential.two_sample(Sums.of(rng.exponential(1.0, PLANNED) + effect),
                                       Sums.of(rng.exponential(1.0, PLANNED)), 1.0, 1.0, PLANNED, ALPHA).worse
                 for _ in range(400))
    assert 0.90 <= caught / 400 <= 0.99  # 95 % power, one look at the planned rows
    assert sequential.detectable(pilot, 4 * PLANNED, ALPHA) < effect / 1.8  # 4x the rows: about half the effect


def test_too_few_rows_give_no_interval_and_the_multiplier_is_tightest_at_the_planned_rows() -> None:
    assert sequential.paired(PairSums.of(np.ones(1), np.ones(1)), 1.0, 1.0, PLANNED, ALPHA) is None
    assert sequential.two_sample(Sums.of(np.ones(5)), Sums.of(np.ones(1)), 1.0, 1.0, PLANNED, ALPHA) is None
    widths = {n: sequential.multiplier(n, PLANNED, ALPHA) / np.sqrt(n) for n in (50, 500, 5000)}
    assert widths[50] > widths[500] > widths[5000]
    assert sequential.multiplier(PLANNED, PLANNED, ALPHA) < sequential.multiplier(PLANNED, 20, ALPHA)


def test_the_label_share_distance_bound_is_zero_for_noise_and_positive_for_a_real_move() -> None:
    noise = sequential.shares_distance_low({"a": 0.5, "b": 0.5}, {"a": 0.7, "b": 0.3}, 6, 6, 100, ALPHA)
    assert noise == 0.0
    moved = sequential.shares_distance_low({"a": 0.5, "b": 0.5}, {"a": 0.9, "b": 0.1}, 5000, 5000, 100, ALPHA)
    assert 0.3 < moved < 0.4  # the distance is 0.4; the bound is under it
