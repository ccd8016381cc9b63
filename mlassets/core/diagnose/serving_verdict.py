"""Why an endpoint's p99 is slow, named as one of five causes: batching, a dependency, feature retrieval, the model, or
the host, from its per-request spans.

The method: take the slow requests (p99 and above), compare their spans with fast ones (p50 and below)
and say where the extra time accumulates. The stage that gains the most is the cause; a second one gaining at
least half as much is named with it ("batching or a dependency"), and so is a waiting stage (the batch queue, a
dependency, feature retrieval) that holds a large share of the slow requests' time even when the fast ones wait
as long, or whose own p99 spikes by a tenth of the request's (the slowest requests of one stage need not
be the slowest overall). Time outside every span, reading the request, or in the service's own pre/post-processing
is the host's (CPU contention, the event loop). On a saturated host (``host.Pressure``) a CPU-bound stage's wall
time beyond its CPU time, and the batch queue's wait beyond the window it held open (behind passes, and for the
thread that runs them, on contended CPUs), were spent waiting for a CPU: they are the host's, named with the
pressure, and no stage is blamed for them; a stage's own gain is named beside them when it is a tenth of the p99's
excess over the median or more. The model is cleared by name when it
is not the cause: a slow p99 is often not the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mlassets.core.diagnose.host import Pressure, attribute, pressure_of, pressures
from mlassets.core.diagnose.spans import ENDPOINT, requests, stage_table

CAUSE = {"batch_queue": "batching", "downstream": "a dependency", "feature_retrieval": "feature retrieval",
         "model": "the model", "preprocessing": "the host", "postprocessing": "the host", "other": "the host",
         "receive": "the host", "cpu_wait": "the host"}
NEXT = {
    "batching": "inspect the queue depth (mlassets_serving_queue_depth) and the batch settings "
                "(serving.batch_wait_ms, serving.max_batch_size)",
    "a dependency": "check the dependency's retries, timeouts and circuit breaker (serving.downstream_url)",
    "feature retrieval": "look at the feature lookup's cache hit rate and the feature store's latency",
    "the model": "profile the serving process's forward pass",
    "the host": "look for CPU contention on the host (other processes, threads) before touching the model",
}
LABELS = {"feature_retrieval": "feature retrieval", "preprocessing": "preprocessing", "batch_queue": "batch queue",
          "model": "model", "postprocessing": "post-processing", "downstream": "downstream", "other": "outside spans",
          "receive": "receive (HTTP)", "cpu_wait": "waiting for a CPU"}
CPU_BOUND = ("preprocessing", "model", "postprocessing")  # their wall beyond their CPU, on a saturated host, is waiting
WAITING = ("batch_queue", "downstream", "feature_retrieval")  # named by their share of a slow request too
SHARE_OF_STAGES, SHARE_OF_REQUEST = 0.2, 0.1


@dataclass(frozen=True)
class ServingVerdict:
    causes: list[str]  # the five causes' names, the larger first
    p50_ms: float
    p99_ms: float
    slow: pd.Series  # mean ms per stage of the slow requests (``cpu_wait``: moved off the stages to the host)
    extra: pd.Series  # slow - fast per stage
    table: pd.DataFrame  # p50/p99 per stage
    host: Pressure | None = None  # the host's pressure under the slow requests, when recorded

    @property
    def saturated(self) -> bool:
        return self.host is not None and self.host.saturated

    @property
    def headline(self) -> str:
        causes = " or ".join(self.causes)
        return causes if "the model" in self.causes else f"{causes}, not the model"

    def sentence(self) -> str:
        parts = " + ".join(f"{LABELS[s]} {self.slow[s]:.0f}" for s in self.slow.index if round(float(self.slow[s])) > 0)
        gains = ", ".join(f"{LABELS[s]} +{v:.0f} ms" for s, v in self.extra.sort_values(ascending=False).items()
                          if round(float(v)) > 0)
        host = ""
        if self.saturated and self.host is not None:
            host = (f" The host is saturated: {self.host.sentence()}; {self.slow.get('cpu_wait', 0.0):.0f} ms of a "
                    "slow request waited for a CPU and is counted as the host's, not a stage's.")
        return (f"median request {self.p50_ms:.0f} ms, p99 {self.p99_ms:.0f} ms = {parts} ms. Against the "
                f"median ones, slow requests gain {gains or 'nothing in any span'}: the issue is {self.headline} "
                f"(model {self.slow['model']:.0f} ms at p99, {self.extra['model']:+.0f} ms).{host} Next: "
                f"{self.next_step()}.")

    def next_step(self) -> str:
        if self.causes[0] == "the host" and self.saturated and self.host is not None:
            return (f"free CPUs on the host ({self.host.sentence()}: other processes, the serving threads) or move "
                    "the endpoint before tuning any stage")
        return NEXT[self.causes[0]]


def _off_the_stages(work: pd.DataFrame, cpu: pd.DataFrame | None, window: pd.Series | None,
                    slow: pd.Index) -> pd.DataFrame:
    """``work`` with the time spent waiting for a CPU moved from the stages into ``cpu_wait``."""
    work = work.copy()
    work["cpu_wait"] = 0.0
    if cpu is None:
        return work
    walls, waits = pd.Series(0.0, index=work.index), pd.Series(0.0, index=work.index)
    for stage in CPU_BOUND:
        if stage not in cpu:
            continue
        used = cpu[stage].reindex(work.index)
        waited = (work[stage] - used).clip(lower=0.0).fillna(0.0)
        walls += work[stage].where(used.notna(), 0.0)
        waits += waited
        work[stage] -= waited
    if window is not None:  # batching's own wait is the window it held open; beyond it, a request waited for a pass
        # (and the thread that runs it) to get a CPU: the host's
        behind = (work["batch_queue"] - window.reindex(work.index).fillna(0.0)).clip(lower=0.0)
    else:  # no window recorded: the share of the passes' and handlers' time spent waiting for a CPU (a request
        # queues behind other requests' passes, so its own stages may not say how long those waited; the slow
        # requests' share is the floor)
        mine = (waits / walls.where(walls > 0)).fillna(0.0)
        slow_walls = float(walls.reindex(slow).sum())
        share = mine.clip(lower=float(waits.reindex(slow).sum()) / slow_walls if slow_walls > 0 else 0.0)
        behind = work["batch_queue"].clip(lower=0.0) * share
    work["batch_queue"] -= behind
    work["cpu_wait"] = waits + behind
    return work


def verdict(reqs: pd.DataFrame, cpu: pd.DataFrame | None = None, pressure: pd.DataFrame | None = None,
            window: pd.Series | None = None) -> ServingVerdict | None:
    """The verdict of an endpoint's requests (``spans.requests(frame, ENDPOINT)``); None with fewer than 2.

    ``cpu``: CPU ms per request and stage, ``pressure``: the host's per request, ``window``: ms each request's
    batch queue was held open for others (``host.attribute``/``host.pressures``; ``recorded`` reads all three)."""
    if len(reqs) < 2:
        return None
    p50, p99 = float(reqs["total"].quantile(0.5)), float(reqs["total"].quantile(0.99))
    slow_ids, fast_ids = reqs.index[reqs["total"] >= p99], reqs.index[reqs["total"] <= p50]
    host = pressure_of(pressure.reindex(slow_ids)) if pressure is not None else None
    work = reqs.drop(columns="total")
    saturated = host is not None and host.saturated
    work = _off_the_stages(work, cpu if saturated else None, window, slow_ids)
    slow, fast = work.loc[slow_ids].mean(), work.loc[fast_ids].mean()
    extra = (slow - fast).clip(lower=0.0)
    ranked = extra.drop("cpu_wait").sort_values(ascending=False)  # the stages' own gains, the host's waits apart
    top, floor = float(ranked.iloc[0]), SHARE_OF_REQUEST * max(p99 - p50, 0.0)
    waited = float(extra["cpu_wait"]) if saturated else 0.0
    if saturated:  # beside a saturated host a stage is named for a gain that matters: half a median request or more
        floor = max(floor, p50 / 2)
    causes: list[str] = []
    for stage, gain in ranked.items():
        cause = CAUSE[str(stage)]
        named = top > 0 and gain >= top / 2 and (gain >= floor or not saturated)
        if (named or (not causes and not saturated)) and cause not in causes:
            causes.append(cause)
    staged, p99s, p50s = float(slow.drop(["other", "cpu_wait", "receive"]).sum()), work.quantile(0.99), work.median()
    for stage in sorted(WAITING, key=lambda s: -slow[s]):
        held = float(slow[stage]) >= SHARE_OF_STAGES * staged and slow[stage] >= SHARE_OF_REQUEST * slow.sum()
        spikes = (p99s[stage] - p50s[stage] >= max(SHARE_OF_REQUEST * (p99 - p50), waited)
                  and p99s[stage] >= SHARE_OF_REQUEST * p99)  # its own p99: the slowest requests may differ
        if (held or spikes) and float(slow[stage]) + float(p99s[stage]) > 0 and CAUSE[stage] not in causes:
            causes.append(CAUSE[stage])
    if saturated and "the host" not in causes:  # first when its waits gained more than any stage did
        causes.insert(0 if not causes or extra["cpu_wait"] >= top else len(causes), "the host")
    return ServingVerdict(causes, p50, p99, slow, slow - fast, stage_table(reqs), host)


def recorded(frame: pd.DataFrame, variant: str | None = None) -> ServingVerdict | None:
    """The verdict of the endpoint requests in ``frame`` (``spans.read_spans`` rows; answered by ``variant`` if
    given), with the CPU time, batch window and host pressure their spans recorded."""
    window = attribute(frame, ENDPOINT, "window_ms", ("batch_queue",))["batch_queue"]
    return verdict(requests(frame, ENDPOINT, variant), attribute(frame, ENDPOINT, "cpu_ms", CPU_BOUND),
                   pressures(frame, ENDPOINT), window)
