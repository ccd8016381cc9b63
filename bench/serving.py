"""``mlassets serve`` under load: added latency against the in-process call, throughput at p99 <= 50 ms with
batching on against off, the spans' sum against the client's latency, and failed requests across a swap.

The flights MLP (the shipped config's sizes) is registered with a passing gate and promoted in a fresh home;
each server is a real ``mlassets serve`` process on a free loopback port. The load generator (asyncio streams
with the request's bytes built once, so that it takes little of the cores it shares with the server; httpx for
comparison) sends only to 127.0.0.1 and is bounded in requests and seconds per step.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench.registry import Result, benchmark, toy
from bench.serving_load import NAME, P99_BUDGET_MS, config_with, load, register_version, request_body, serve_process


def _promoted() -> None:
    from mlassets.core.registry import promote

    promote.promote(NAME, register_version(0))


@benchmark("serving_added_latency_p50", goal="p50 of one-row HTTP requests minus the in-process call",
           better="lower", target=1.5)
def serving_added_latency_p50() -> Result:
    from mlassets.serve import load_champion

    _promoted()
    body = request_body()
    model = load_champion(NAME)
    frame = pd.DataFrame(body["rows"])
    inproc = []
    for _ in range(toy(300, 20)):
        start = time.perf_counter()
        model.predict(frame)
        inproc.append(time.perf_counter() - start)
    runs = {}
    with serve_process(config_with()) as base:
        for client in toy(("raw", "httpx", "raw"), ("raw", "httpx")):  # around httpx: the later raw run is kept
            warm_up, measured = toy((50, 300), (5, 20))
            for run in (load(base, body, 1, warm_up, 30, client), load(base, body, 1, measured, 60, client)):
                if run.failed:
                    raise RuntimeError(f"{client}: {run.failed} of {len(run.statuses)} requests failed")
            runs[client] = run
    http, local = float(np.median(runs["raw"].latencies_s)) * 1000, float(np.median(inproc)) * 1000
    pooled = float(np.median(runs["httpx"].latencies_s)) * 1000
    return Result(http - local, "ms", f"HTTP p50 {http:.2f} ms vs in-process p50 {local:.2f} ms "
                                      f"({len(runs['raw'].statuses)} sequential requests, keep-alive, a lean "
                                      f"client); through httpx p50 {pooled:.2f} ms (+{pooled - local:.2f} ms)")


def _levels(base: str, body: dict) -> list[tuple[int, float, float]]:
    """``(clients, requests/s, p99 ms)`` over growing client counts."""
    out = []
    for clients in toy((1, 4, 16, 32, 64), (1, 4)):
        run = load(base, body, clients, toy(1500, 40), 15)
        if run.failed:
            raise RuntimeError(f"{run.failed} of {len(run.statuses)} requests failed at {clients} clients")
        out.append((clients, run.throughput, run.p99_ms))
    return out


def _best(levels: list[tuple[int, float, float]]) -> tuple[int, float, float] | None:
    within = [level for level in levels if level[2] <= toy(P99_BUDGET_MS, math.inf)]  # smoke: no budget judged
    return max(within, key=lambda level: level[1]) if within else None


def _text(levels: list[tuple[int, float, float]]) -> str:
    return ", ".join(f"{c} clients {t:.0f} req/s p99 {p:.0f} ms" for c, t, p in levels)


@benchmark("serving_batching_throughput", goal="throughput at p99 <= 50 ms, batching on / off", better="higher",
           target=3.0)
def serving_batching_throughput() -> Result:
    _promoted()
    body = request_body()
    levels = {}
    for batching in (True, False):
        with serve_process(config_with(batching=batching)) as base:
            load(base, body, 4, toy(100, 10), 30)  # warm-up
            levels[batching] = _levels(base, body)
    on, off = _best(levels[True]), _best(levels[False])
    if on is None or off is None:
        raise RuntimeError(f"no client count kept p99 within {P99_BUDGET_MS:g} ms: on [{_text(levels[True])}]; "
                           f"off [{_text(levels[False])}]")
    return Result(on[1] / off[1], "x", f"on {on[1]:.0f} req/s ({on[0]} clients, p99 {on[2]:.1f} ms) vs off "
                                       f"{off[1]:.0f} req/s ({off[0]} clients, p99 {off[2]:.1f} ms); one-row requests")


@benchmark("serving_span_sum_ratio", goal="|stage spans' sum / the request's span - 1|, median request",
           better="lower", target=0.05)
def serving_span_sum_ratio() -> Result:
    from mlassets.core.diagnose import spans

    _promoted()
    with serve_process(config_with()) as base:
        run = load(base, request_body(20), 4, toy(400, 40), 60)
    if run.failed:
        raise RuntimeError(f"{run.failed} of {len(run.statuses)} requests failed")
    frame = spans.read_spans(Path(os.environ["MLASSETS_HOME"]) / "traces" / "serving.jsonl")
    mine = frame[(frame["root"] == spans.ENDPOINT) & frame["trace_id"].isin(run.trace_ids)]
    if mine["trace_id"].nunique() != len(set(run.trace_ids)):
        raise RuntimeError(f"{len(set(run.trace_ids)) - mine['trace_id'].nunique()} requests have no spans")
    sums = mine[mine["parent_id"] != ""].groupby("trace_id")["duration_ms"].sum()
    roots = mine[mine["parent_id"] == ""].set_index("trace_id")["duration_ms"]
    server = float((sums / roots).median())
    client = float(np.median([sums[t] / (s * 1000) for t, s in zip(run.trace_ids, run.latencies_s, strict=True)]))
    return Result(abs(server - 1), "", f"median stage spans' sum / request span {server:.3f}; / the client's "
                                       f"latency {client:.3f} (HTTP parsing, the loopback and the client outside "
                                       f"the spans); {len(sums)} requests, 4 clients, 20 rows each")


@benchmark("serving_swap_failed_requests", goal="failed requests while the champion is swapped under load",
           better="lower", target=0)
def serving_swap_failed_requests() -> Result:
    import threading

    from mlassets.core.registry import promote

    _promoted()
    second = register_version(1)
    body = request_body()
    with serve_process(config_with(swap_poll_s=0.2)) as base:
        timer = threading.Timer(toy(3.0, 1.0), promote.promote, (NAME, second))
        timer.start()
        try:  # smoke: bounded by time alone (4 s), so that the swap falls inside the load
            run = load(base, body, 8, toy(4000, 10**6), toy(12, 4))
        finally:
            timer.join()
    if second not in run.versions or "1" not in run.versions:
        raise RuntimeError(f"no swap seen: versions answered {sorted(set(run.versions))}")
    counts = f"v1 answered {run.versions.count('1')}, v{second} {run.versions.count(second)}"
    return Result(run.failed, "failed", f"{len(run.statuses)} requests by 8 clients over {run.seconds:.1f} s; {counts}")
