"""Serving latency by stage from OpenTelemetry spans: p50/p99 per stage, and where slow requests lose time.

Code is instrumented with the OpenTelemetry API only (``trace.get_tracer``), a no-op until ``enable`` installs
the SDK with an exporter that appends finished spans as JSON lines to a file the dashboard reads. The
method: take the slow requests (p99 and above), compare their stage times with fast ones (p50 and
below), and say which stage the extra time goes to and whether it is waiting or computing.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

STAGES = ("read", "preprocessing", "model", "write")
WAITING = {"read", "write"}  # I/O: time waiting on storage; the others compute
ENDPOINT = "endpoint_request"  # the root span of one request to ``mlassets serve``
ENDPOINT_STAGES = ("feature_retrieval", "preprocessing", "batch_queue", "model", "postprocessing", "downstream")
_WAITS = {"read": "waiting on storage (I/O)", "write": "waiting on storage (I/O)", "batch_queue": "waiting in a queue",
          "downstream": "waiting on a dependency", "feature_retrieval": "waiting on the feature store"}


def stages_of(root: str) -> tuple[str, ...]:
    """The stage spans under a request of kind ``root``: the endpoint's, else the batch-inference path's."""
    return ENDPOINT_STAGES if root == ENDPOINT else STAGES
_LOCK = threading.Lock()


class JsonlExporter(SpanExporter):
    """Appends each finished span as one JSON line to ``path`` (the file can be switched with ``enable``). The file
    stays open between spans (a request ends six); it is opened again when the path changes or the file was
    removed or replaced, and every line is flushed at once, so a reader sees a request's spans when it ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None
        self._opened: tuple[Path, int] | None = None  # the path and inode the open file was opened as

    def _handle(self) -> TextIO:
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = -1
        if self._file is None or self._opened != (self.path, inode):
            if self._file is not None:
                self._file.close()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a")
            self._opened = (self.path, os.fstat(self._file.fileno()).st_ino)
        return self._file

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = []
        for span in spans:
            ctx, parent = span.get_span_context(), span.parent
            lines.append(json.dumps({
                "trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}",
                "parent_id": f"{parent.span_id:016x}" if parent else "", "name": span.name,
                "start_ns": span.start_time, "end_ns": span.end_time,
                "attributes": {k: v for k, v in (span.attributes or {}).items() if isinstance(v, str | int | float)},
            }))
        with _LOCK:
            out = self._handle()
            out.write("\n".join(lines) + "\n")
            out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with _LOCK:
            if self._file is not None:
                self._file.close()
                self._file, self._opened = None, None


class TraceProcessor(SpanProcessor):
    """Hands a trace's spans to the exporter together, when its root ends (one write a request, not one a span);
    a span of a trace whose root already ended, or past ``MAX_OPEN`` open traces, goes at once."""

    MAX_OPEN = 10_000

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self._open: dict[int, list[ReadableSpan]] = {}
        self._ended: dict[int, None] = {}  # the last 1024 traces whose root ended, oldest first
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        trace_id, parent = span.get_span_context().trace_id, span.parent
        with self._lock:
            if parent is not None and not parent.is_remote and trace_id not in self._ended:
                if len(self._open) < self.MAX_OPEN or trace_id in self._open:
                    self._open.setdefault(trace_id, []).append(span)
                    return
                batch = [span]
            else:
                batch = [*self._open.pop(trace_id, []), span]
                if parent is None or parent.is_remote:
                    self._ended[trace_id] = None
                    if len(self._ended) > 1024:
                        del self._ended[next(iter(self._ended))]
        self.exporter.export(batch)

    def shutdown(self) -> None:
        with self._lock:
            left, self._open = [s for spans in self._open.values() for s in spans], {}
        if left:
            self.exporter.export(left)
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_EXPORTER: JsonlExporter | None = None


def enable(path: Path) -> None:
    """Record this process's spans into ``path`` (installs the SDK tracer provider once, then re-points it)."""
    global _EXPORTER
    with _LOCK:
        if _EXPORTER is None:
            _EXPORTER = JsonlExporter(path)
            provider = TracerProvider()
            provider.add_span_processor(TraceProcessor(_EXPORTER))
            trace.set_tracer_provider(provider)
        _EXPORTER.path = path


def read_spans(path: Path) -> pd.DataFrame:
    """One row per span: trace, ids, name, root (the request's top span name), duration in ms."""
    columns = ["trace_id", "span_id", "parent_id", "name", "start_ns", "duration_ms", "root", "variant"]
    if not path.is_file():
        return pd.DataFrame(columns=columns)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    frame = pd.DataFrame(rows, columns=["trace_id", "span_id", "parent_id", "name", "start_ns", "end_ns",
                                        "attributes"])
    if frame.empty:
        return pd.DataFrame(columns=columns)
    frame["duration_ms"] = (frame["end_ns"] - frame["start_ns"]) / 1e6
    top = frame[frame["parent_id"] == ""].drop_duplicates("trace_id").set_index("trace_id")
    frame["root"] = frame["trace_id"].map(top["name"]).fillna("")
    answered = top["attributes"].map(lambda a: str(a.get("variant", "")) if isinstance(a, dict) else "")
    frame["variant"] = frame["trace_id"].map(answered).fillna("")  # who answered (an online test's champion, canary)
    return frame[columns]


def variants(spans: pd.DataFrame, root: str) -> list[str]:
    """The variants that answered requests of kind ``root`` (``champion``, ``canary`` during a canary test)."""
    if "variant" not in spans:
        return []
    return sorted(v for v in spans.loc[spans["root"] == root, "variant"].unique() if v)


def requests(spans: pd.DataFrame, root: str, variant: str | None = None) -> pd.DataFrame:
    """One row per request of kind ``root`` (answered by ``variant``, if given): its total ms and the ms of every
    stage under it (0 if absent)."""
    names = stages_of(root)
    mine = spans[spans["root"] == root]
    if variant is not None:
        mine = mine[mine["variant"] == variant]
    if mine.empty:
        return pd.DataFrame(columns=["total", *names, "other"], dtype="float64")
    total = mine[mine["parent_id"] == ""].groupby("trace_id")["duration_ms"].sum().rename("total")
    stages = mine[mine["name"].isin(names)].pivot_table(index="trace_id", columns="name", values="duration_ms",
                                                         aggfunc="sum")
    out = pd.concat([total, stages], axis=1).fillna(0.0)
    for stage in names:
        if stage not in out:
            out[stage] = 0.0
    out["other"] = np.maximum(out["total"] - out[list(names)].sum(axis=1), 0.0)
    return out[["total", *names, "other"]]


P99_MIN_REQUESTS = 100  # a p99 is the slowest 1%: fewer requests and it is only the slowest one


def too_few_for_p99(count: int) -> str:
    """What a page says next to a p99 of ``count`` requests ("" when there are enough)."""
    if count >= P99_MIN_REQUESTS:
        return ""
    return (f"{count} request{'s' if count != 1 else ''}: too few for a p99, which needs at least "
            f"{P99_MIN_REQUESTS} (the slowest 1%); the p99 shown is about the slowest request, not a percentile to "
            "act on. Trace more: `mlassets diagnose --trace-serving MODEL --rows FILE`.")


def stage_table(reqs: pd.DataFrame) -> pd.DataFrame:
    """p50 and p99 in ms of the total and of every stage."""
    return pd.DataFrame({"p50_ms": reqs.quantile(0.5), "p99_ms": reqs.quantile(0.99)})


@dataclass(frozen=True)
class SlowVsFast:
    p50_ms: float
    p99_ms: float
    slow: pd.Series  # mean ms per stage of requests at or above p99
    fast: pd.Series  # ... at or below p50
    extra: pd.Series  # slow - fast per stage
    stage: str  # where most of the extra time goes

    def sentence(self) -> str:
        gap = float(self.extra.sum())
        kind = _WAITS.get(self.stage, "compute")
        top = ", ".join(f"{s} +{v:.1f} ms" for s, v in self.extra.sort_values(ascending=False).items() if v > 0)
        return (f"median request {self.p50_ms:.1f} ms, p99 {self.p99_ms:.1f} ms: slow requests spend {gap:.1f} ms "
                f"more than fast ones, most of it in {self.stage} ({kind}): {top or 'no stage stands out'}")


def slow_vs_fast(reqs: pd.DataFrame) -> SlowVsFast | None:
    """Compare requests at or above p99 with those at or below p50 (None with fewer than 2 requests)."""
    if len(reqs) < 2:
        return None
    p50, p99 = float(reqs["total"].quantile(0.5)), float(reqs["total"].quantile(0.99))
    slow = reqs[reqs["total"] >= p99].drop(columns="total").mean()
    fast = reqs[reqs["total"] <= p50].drop(columns="total").mean()
    extra = slow - fast
    return SlowVsFast(p50, p99, slow, fast, extra, str(extra.idxmax()))
