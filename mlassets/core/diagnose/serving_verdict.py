"""Why an endpoint's p99 is slow, named as one of five causes: batching, a dependency, feature retrieval, the model, or
the host, from its per-request spans.

The method: take the slow requests (p99 and above), compare their spans with fast ones (p50 and below)
and say where the extra time accumulates. The stage that gains the most is the cause; a second one gaining at
least half as much is named with it ("batching or a dependency"). Time outside every span, or in the service's own
pre/post-processing, is the host's (CPU contention, the event loop). The model is cleared by name when it is not
the cause: a slow p99 is often not the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mlassets.core.diagnose.spans import ENDPOINT_STAGES, slow_vs_fast, stage_table

CAUSE = {"batch_queue": "batching", "downstream": "a dependency", "feature_retrieval": "feature retrieval",
         "model": "the model", "preprocessing": "the host", "postprocessing": "the host", "other": "the host"}
NEXT = {
    "batching": "inspect the queue depth (mlassets_serving_queue_depth) and the batch settings "
                "(serving.batch_wait_ms, serving.max_batch_size)",
    "a dependency": "check the dependency's retries, timeouts and circuit breaker (serving.downstream_url)",
    "feature retrieval": "look at the feature lookup's cache hit rate and the feature store's latency",
    "the model": "profile the serving process's forward pass",
    "the host": "look for CPU contention on the host (other processes, threads) before touching the model",
}
LABELS = {"feature_retrieval": "feature retrieval", "preprocessing": "preprocessing", "batch_queue": "batch queue",
          "model": "model", "postprocessing": "post-processing", "downstream": "downstream", "other": "outside spans"}


@dataclass(frozen=True)
class ServingVerdict:
    causes: list[str]  # the five causes' names, the larger first
    p50_ms: float
    p99_ms: float
    slow: pd.Series  # mean ms per stage of the slow requests
    extra: pd.Series  # slow - fast per stage
    table: pd.DataFrame  # p50/p99 per stage

    @property
    def headline(self) -> str:
        causes = " or ".join(self.causes)
        return causes if "the model" in self.causes else f"{causes}, not the model"

    def sentence(self) -> str:
        parts = " + ".join(f"{LABELS[s]} {self.slow[s]:.0f}" for s in (*ENDPOINT_STAGES, "other")
                           if round(float(self.slow[s])) > 0)
        gains = ", ".join(f"{LABELS[s]} +{v:.0f} ms" for s, v in self.extra.sort_values(ascending=False).items()
                          if round(float(v)) > 0)
        return (f"median request {self.p50_ms:.0f} ms, p99 {self.p99_ms:.0f} ms = {parts} ms. Against the "
                f"median ones, slow requests gain {gains or 'nothing in any span'}: the issue is {self.headline} "
                f"(model {self.slow['model']:.0f} ms at p99, {self.extra['model']:+.0f} ms). Next: "
                f"{NEXT[self.causes[0]]}.")


def verdict(reqs: pd.DataFrame) -> ServingVerdict | None:
    """The verdict of an endpoint's requests (``spans.requests(frame, ENDPOINT)``); None with fewer than 2."""
    comparison = slow_vs_fast(reqs)
    if comparison is None:
        return None
    extra = comparison.extra.clip(lower=0.0)
    ranked = extra.sort_values(ascending=False)
    top = float(ranked.iloc[0])
    causes: list[str] = []
    for stage, gain in ranked.items():
        cause = CAUSE[str(stage)]
        if (not causes or (top > 0 and gain >= top / 2)) and cause not in causes:
            causes.append(cause)
    return ServingVerdict(causes, comparison.p50_ms, comparison.p99_ms, comparison.slow, comparison.extra,
                          stage_table(reqs))
