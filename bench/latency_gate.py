"""The latency rule's verdicts on one candidate/champion pair, gated 20 times under a CPU hog: before and after.

Before: the candidate timed alone (200 single-row calls at torch's default threads) and its p99 against a
budget. After: both models timed interleaved at one thread, the candidate's change against the champion
judged by its bootstrap interval, and the budget read on the median of round medians. The budget is set where
the incident had it: at the p99 the candidate shows on a quiet machine (5 measurements, their median). A flip is
a verdict that differs from the majority of the 20.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd
import torch

from bench.checks import expect_equal, expect_finite
from bench.registry import Result, benchmark, toy
from mlassets.core.config import GateConfig
from mlassets.core.evaluate.gate_budget import judge_latency
from mlassets.core.evaluate.latency import measure_latency
from mlassets.core.evaluate.score import latency_sample, measure_models
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.artifact import ModelBundle, save_bundle
from mlassets.core.train.torch_run.mlp import TabularMLP

RUNS = 20


def _rows(n: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"carrier": rng.choice(["AA", "DL", "UA", "B6"], n), "origin": rng.choice(["EWR", "JFK"], n),
                         "distance": rng.uniform(100, 2500, n), "hour": rng.integers(5, 23, n).astype(float),
                         "arr_delay": rng.normal(5, 30, n)})


def _bundle(rows: pd.DataFrame, hidden: list[int]) -> ModelBundle:
    torch.manual_seed(0)
    pre = Preprocessor.fit(rows, ["carrier", "origin"], ["distance", "hour"])
    model = TabularMLP(pre.cardinalities, 2, 8, hidden, 0.0)
    return ModelBundle(model, pre, {"embedding_dim": 8, "hidden": hidden, "dropout": 0.0}, "arr_delay")


def _flips(verdicts: list[bool]) -> int:
    return min(verdicts.count(True), verdicts.count(False))


@benchmark("latency_gate_flips", goal="latency verdict flips in 20 gate runs under a CPU hog", better="lower",
           target=0)
def latency_gate_flips() -> Result:
    rows = _rows()
    candidate, champion = _bundle(rows, [128, 64]), _bundle(rows, [64, 32])
    bundles = {"candidate": candidate, "champion": champion}
    sample = latency_sample(rows, [candidate])
    quiet = [measure_latency(candidate.predict, sample)["single_p99_ms"] for _ in range(toy(5, 2))]
    budget = float(np.median(quiet))
    gate = dataclasses.replace(GateConfig(), latency_budget_ms=budget)
    before, after, p99s, medians = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {m: save_bundle(b, f"{tmp}/{m}") for m, b in bundles.items()}
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            for _ in range(toy(RUNS, 2)):
                p99 = measure_latency(candidate.predict, sample)["single_p99_ms"]
                p99s.append(p99)
                before.append(p99 <= budget)
                perf = measure_models(bundles, dirs, rows)["candidate"]
                medians.append(perf["single_median_ms"])
                after.append(all(r.passed for r in judge_latency(gate, perf, 0.95)))
        finally:
            hog.kill()
            hog.wait()
    expect_finite([*quiet, *p99s, *medians], "latencies measured")
    expect_equal(len(after), toy(RUNS, 2), "gate runs judged")
    detail = (f"budget {budget:.2f} ms (the quiet p99); before: p99 {min(p99s):.2f}-{max(p99s):.2f} ms, "
              f"{before.count(True)} pass / {before.count(False)} reject = {_flips(before)} flips; after: median of "
              f"round medians {min(medians):.2f}-{max(medians):.2f} ms, {after.count(True)} pass / "
              f"{after.count(False)} reject = {_flips(after)} flips")
    return Result(value=float(_flips(after)), unit="flips", detail=detail)
