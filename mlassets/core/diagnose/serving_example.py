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

from mlassets.core.diagnose.host import Pressure
from mlassets.core.diagnose.spans import ENDPOINT

SENTENCE = ("If median requests are 80 ms and p99 is now 160 ms, I might find: feature retrieval 15 ms, preprocessing "
            "10 ms, batch queue 55 ms, model execution 20 ms, downstream call 45 ms. That tells me the issue is "
            "batching or a dependency, not the model itself.")
SLOW = {"feature_retrieval": 15.0, "preprocessing": 10.0, "batch_queue": 55.0, "model": 20.0, "downstream": 45.0,
        "postprocessing": 15.0}  # 160 ms
FAST = {"feature_retrieval": 15.0, "preprocessing": 10.0, "batch_queue": 12.0, "model": 20.0, "downstream": 15.0,
        "postprocessing": 8.0}  # 80 ms


def seed_p99_spans(requests: int = 200, slow_every: int = 50, slow: dict[str, float] | None = None,
                   fast: dict[str, float] | None = None, outside_ms: float = 0.0,
                   cpu: tuple[dict[str, float], dict[str, float]] | None = None, pressure: Pressure | None = None,
                   window: tuple[float, float] | None = None) -> pd.DataFrame:
    """Spans (``spans.read_spans`` columns) of ``requests`` endpoint requests, every ``slow_every``-th slow (the
    example's by default; ``outside_ms``: time of a slow request outside every span). Recorded as a server records
    them, optionally: ``cpu`` ms per stage of the slow and of the other requests, the host's ``pressure`` on every
    root, and the batch queue's ``window`` ms held open (slow, others)."""
    rows = []
    for i in range(requests):
        is_slow = i % slow_every == slow_every - 1
        stages = (slow or SLOW) if is_slow else (fast or FAST)
        trace_id, start = f"{i:032x}", i * 1_000_000_000
        total = sum(stages.values()) + (outside_ms if is_slow else 0.0)
        rows.append((trace_id, f"{i:08x}00000000", "", ENDPOINT, start, total,
                     pressure.attributes() if pressure is not None else {}))
        at = start
        for j, (name, ms) in enumerate(stages.items()):
            attributes: dict[str, float] = {}
            if cpu is not None and name in cpu[0 if is_slow else 1]:
                attributes["cpu_ms"] = cpu[0 if is_slow else 1][name]
            if window is not None and name == "batch_queue":
                attributes["window_ms"] = window[0 if is_slow else 1]
            rows.append((trace_id, f"{i:08x}{j + 1:08x}", f"{i:08x}00000000", name, at, ms, attributes))
            at += int(ms * 1e6)
    frame = pd.DataFrame(rows, columns=["trace_id", "span_id", "parent_id", "name", "start_ns", "duration_ms",
                                        "attributes"])
    frame["root"] = ENDPOINT
    return frame
