"""A worked example of a slow p99 (``mlassets diagnose --serving-example``) as endpoint spans, read by the
same diagnosis as recorded ones:

"If median requests are 80 ms and p99 is now 160 ms, I might find: feature retrieval 15 ms, preprocessing 10 ms,
batch queue 55 ms, model execution 20 ms, downstream call 45 ms. That tells me the issue is batching or a
dependency, not the model itself."

The example gives the slow request's spans; the median ones here spend the same on features, preprocessing and the
model, and less in the queue and on the dependency (the rest of 80 ms).
"""

from __future__ import annotations

import pandas as pd

from mlassets.core.diagnose.spans import ENDPOINT

SENTENCE = ("If median requests are 80 ms and p99 is now 160 ms, I might find: feature retrieval 15 ms, preprocessing "
            "10 ms, batch queue 55 ms, model execution 20 ms, downstream call 45 ms. That tells me the issue is "
            "batching or a dependency, not the model itself.")
SLOW = {"feature_retrieval": 15.0, "preprocessing": 10.0, "batch_queue": 55.0, "model": 20.0, "downstream": 45.0,
        "postprocessing": 15.0}  # 160 ms
FAST = {"feature_retrieval": 15.0, "preprocessing": 10.0, "batch_queue": 12.0, "model": 20.0, "downstream": 15.0,
        "postprocessing": 8.0}  # 80 ms


def seed_p99_spans(requests: int = 200, slow_every: int = 50, slow: dict[str, float] | None = None,
                   fast: dict[str, float] | None = None, outside_ms: float = 0.0) -> pd.DataFrame:
    """Spans (``spans.read_spans`` columns) of ``requests`` endpoint requests, every ``slow_every``-th slow (the
    example's by default; ``outside_ms``: time of a slow request outside every span)."""
    rows = []
    for i in range(requests):
        is_slow = i % slow_every == slow_every - 1
        stages = (slow or SLOW) if is_slow else (fast or FAST)
        trace_id, start = f"{i:032x}", i * 1_000_000_000
        total = sum(stages.values()) + (outside_ms if is_slow else 0.0)
        rows.append((trace_id, f"{i:08x}00000000", "", ENDPOINT, start, total))
        at = start
        for j, (name, ms) in enumerate(stages.items()):
            rows.append((trace_id, f"{i:08x}{j + 1:08x}", f"{i:08x}00000000", name, at, ms))
            at += int(ms * 1e6)
    frame = pd.DataFrame(rows, columns=["trace_id", "span_id", "parent_id", "name", "start_ns", "duration_ms"])
    frame["root"] = ENDPOINT
    return frame
