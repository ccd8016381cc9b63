"""Traced batch inference from a Parquet file: one request per batch of rows, spans read/preprocessing/model/write.

Enough requests for p50/p99 per stage; the spans of ``preprocessing`` and ``model`` come from the model
bundle's own instrumentation, so this traces the same code the predictions asset runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from opentelemetry import trace

from mlassets.core.diagnose import spans

_TRACER = trace.get_tracer("mlassets.serving")


def trace_requests(predict: Callable[[pd.DataFrame], np.ndarray], source: Path, out_dir: Path,
                   trace_file: Path, batch_rows: int = 256, limit: int = 1000) -> int:
    """Score ``source`` in requests of ``batch_rows`` rows, writing each one's predictions to ``out_dir``.

    Spans go to ``trace_file``; returns the number of requests.
    """
    spans.enable(trace_file)
    out_dir.mkdir(parents=True, exist_ok=True)
    file = pq.ParquetFile(source)
    count = min(limit, -(-file.metadata.num_rows // batch_rows))
    batches = file.iter_batches(batch_size=batch_rows)
    for request in range(count):
        with _TRACER.start_as_current_span("request", attributes={"request": request}):
            with _TRACER.start_as_current_span("read"):
                rows = next(batches).to_pandas()
            predictions = predict(rows)
            with _TRACER.start_as_current_span("write", attributes={"rows": len(rows)}):
                pq.write_table(pa.table({"prediction": predictions}), out_dir / f"request-{request:06d}.parquet")
    return count
