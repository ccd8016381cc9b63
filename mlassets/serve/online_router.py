"""The endpoint's side of an online test: the candidate loaded with the champion's checks, routed, measured, decided.

The poll thread reads the promotion log (``core.registry.online_log``): a test that starts there is loaded through
``load_version`` (a candidate that fails the checks is rolled back in the log with the reason, and alerted) and
gets its own batcher, built as the champion's (``Batcher.of``). A ``canary`` answers a ``share`` of the requests,
drawn per request as it is admitted; a failed canary pass is counted against it and the request is answered by
the champion. A ``shadow`` scores every request after the champion answered it and never answers. Once both
variants have ``min_requests``, ``auto_decide`` writes the rule's decision to the log; the champion poll then
follows a promotion. With ``label_key`` every scored row is recorded (``recorder``) and the rule reads the labelled
rows' metric that ``mlassets online labels`` wrote beside them (``core.evaluate.online_labels``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import socket
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from mlassets.core.config.serving import OnlineConfig
from mlassets.core.evaluate.online_labels import online_dir, read_labelled
from mlassets.core.evaluate.online_rule import Decision, VariantStats, decide
from mlassets.core.registry import online_log
from mlassets.core.registry.promotion import PromotionError
from mlassets.serve.batcher import Arrival, Batcher, Stopped
from mlassets.serve.load import ServedModel, ServingError, load_version
from mlassets.serve.recorder import Recorder
from mlassets.serve.rows import Rows
from mlassets.serve.telemetry import Metrics, RequestTrace

LOG = logging.getLogger("mlassets.serve")
SHADOW_ROOT = "shadow_request"


@dataclass
class Running:
    """A loaded online test: the candidate, its batcher, the two variants' stats and the canary counter."""

    test: online_log.OnlineTest
    model: ServedModel
    batcher: Batcher
    share: float
    stats: dict[str, VariantStats] = field(default_factory=lambda: {"champion": VariantStats(),
                                                                     "candidate": VariantStats()})
    routed: int = 0
    decided: str = ""
    tasks: set = field(default_factory=set)
    rng: random.Random = field(default_factory=random.Random)
    recorder: Recorder | None = None  # serving.online.label_key set: every scored row, for labels to join

    @property
    def variant(self) -> str:
        return self.test.mode  # what the candidate is called on spans and metrics: canary or shadow

    def take(self) -> bool:
        """Whether this request goes to the canary: drawn with probability ``share`` (a count would follow any
        period in the traffic: every 4th request of a 4-row cycle is always the same row)."""
        self.routed += 1
        return self.rng.random() < self.share

    def summary(self) -> dict[str, Any]:
        return {name: stats.summary() for name, stats in self.stats.items()}


class Online:
    """The online test the promotion log says is running (``running``: None when there is none)."""

    def __init__(self, name: str, rule: OnlineConfig, batcher_for: Callable[[ServedModel], Batcher],
                 metrics: Metrics) -> None:
        self.name, self.rule, self.batcher_for, self.metrics = name, rule, batcher_for, metrics
        self.running: Running | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, set when it starts
        self.who = f"mlassets serve on {socket.gethostname()}"
        self._refused: int | None = None

    # -- the poll thread ------------------------------------------------------------------------------------
    def poll(self) -> str:
        """Follow the log: ``none``, ``started``, ``running``, ``decided: <outcome>``, ``refused`` or ``ended``."""
        try:
            test = online_log.running(self.name)
        except PromotionError as exc:
            LOG.error("ALERT: the promotion log of %r is not trusted, the online test is paused: %s", self.name, exc)
            return "refused"
        run = self.running
        if run is not None and run.test != test:
            self._end(run)
            if test is None:
                return "ended"
        if test is None:
            return "none"
        if self.running is None:
            return self._load(test)
        if self.rule.auto_decide and not run.decided:
            return self.decide()
        return "running"

    def _load(self, test: online_log.OnlineTest) -> str:
        if self._refused == test.seq:
            return "refused"
        try:
            model = load_version(self.name, test.candidate)
        except ServingError as exc:
            self._refused = test.seq
            reason = f"refused at load by the endpoint: {exc}"
            LOG.error("ALERT: online test of %s v%s: %s", self.name, test.candidate, reason)
            with _quiet():
                online_log.roll_back(self.name, test, reason, who=self.who)
            return "refused"
        batcher = self.batcher_for(model)  # the champion's batching policy (``Batcher.of``)
        self._on_loop(_start(batcher))
        recorder = Recorder(online_dir(self.name, test.seq), self.rule.label_key) if self.rule.label_key else None
        self.running = Running(test, model, batcher, self.rule.share, recorder=recorder)
        LOG.warning("online test started: %s v%s as %s against v%s", self.name, test.candidate, test.mode,
                    test.champion)
        return "started"

    def decide(self, force: str = "") -> str:
        """Apply the rule (or ``force``: promote/rollback) to the running test; the outcome is a log row."""
        run = self.running
        if run is None:
            return "none"
        found = self.decision()
        outcome = force or found.outcome
        if outcome == "wait":
            return "running"
        reason = found.reason if not force else f"decided by hand ({force}); the rule said: {found.reason}"
        try:
            if outcome == "promote":
                online_log.promote_candidate(self.name, run.test, reason, who=self.who)
            else:
                online_log.roll_back(self.name, run.test, reason, who=self.who)
        except PromotionError as exc:
            LOG.warning("online test of %s v%s: %s", self.name, run.test.candidate, exc)
            return "running"
        run.decided = outcome
        LOG.warning("online test of %s v%s: %s (%s)", self.name, run.test.candidate, outcome, reason)
        return f"decided: {outcome}"

    def decision(self) -> Decision:
        run = self.running
        assert run is not None
        summary = run.summary()
        labels = read_labelled(online_dir(self.name, run.test.seq)) if run.recorder is not None else None
        return decide(summary["champion"], summary["candidate"], self.rule, labels)

    def _end(self, run: Running) -> None:
        self.running = None
        self._on_loop(run.batcher.stop())
        LOG.warning("online test of %s v%s ended", self.name, run.test.candidate)

    def _on_loop(self, coroutine: Any) -> None:
        if self.loop is None or self.loop.is_closed():
            coroutine.close()
            return
        asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    async def stop(self) -> None:
        run, self.running = self.running, None
        if run is not None:
            await run.batcher.stop()

    # -- the request path (the event loop) ------------------------------------------------------------------
    def shadow(self, run: Running, frame: pd.DataFrame | Rows, trace_id: str, arrival: Arrival) -> None:
        """Score ``frame`` with the shadow after the champion answered (request ``trace_id``, counted on its way to
        the shadow's batcher by ``arrival``); never awaited."""
        task = asyncio.get_running_loop().create_task(self._shadow(run, frame, trace_id, arrival))
        run.tasks.add(task)
        task.add_done_callback(run.tasks.discard)

    async def _shadow(self, run: Running, frame: pd.DataFrame | Rows, trace_id: str, arrival: Arrival) -> None:
        start = time.time_ns()
        span = RequestTrace(start, "shadow", root=SHADOW_ROOT)
        try:
            arrival.queued()
            predicted, _version, queued_ns, timing = await run.batcher.submit(frame)
        except Stopped:  # the test ended first
            span.end(time.time_ns(), status=503, variant="shadow", version=run.test.candidate)
            return
        except Exception:  # noqa: BLE001 - counted against the shadow; nobody waits on it
            LOG.exception("shadow v%s failed on trace %s", run.test.candidate, span.trace_id)
            self.failed(run, "candidate")
            span.end(time.time_ns(), status=500, variant="shadow", version=run.test.candidate)
            return
        span.batch(queued_ns, timing)
        self.scored(run, "candidate", queued_ns, timing.done_ns, predicted, frame, trace_id)
        span.end(timing.done_ns, status=200, variant="shadow", version=run.test.candidate)

    def scored(self, run: Running, who: str, queued_ns: int, done_ns: int, predicted: Any,
               frame: pd.DataFrame | Rows | None = None, trace_id: str = "") -> None:
        seconds = (done_ns - queued_ns) / 1e9
        run.stats[who].scored(seconds * 1000, predicted)
        variant = run.variant if who == "candidate" else "champion"
        self.metrics.scoring.labels(variant).observe(seconds)
        if run.recorder is not None and frame is not None:
            version = run.test.candidate if who == "candidate" else run.test.champion
            run.recorder.record(variant, version, trace_id, frame, predicted)

    def failed(self, run: Running, who: str) -> None:
        run.stats[who].failed()
        self.metrics.variant_errors.labels(run.variant if who == "candidate" else "champion").inc()

    def state(self) -> dict[str, Any]:
        """What ``GET /online`` answers: the test, each variant's figures and the rule's verdict now."""
        run = self.running
        if run is None:
            return {"model": self.name, "test": None}
        found = self.decision()
        return {"model": self.name, "test": dataclasses.asdict(run.test), "share": run.share,
                "rule": dataclasses.asdict(self.rule), "variants": run.summary(),
                "decision": {"outcome": run.decided or found.outcome, "reason": found.reason,
                             "figures": found.figures}}


def fixed(model: ServedModel) -> types.SimpleNamespace:
    """A holder with ``current`` (what ``app.forward`` reads) that never changes: the candidate."""
    return types.SimpleNamespace(current=model)


async def _start(batcher: Batcher) -> None:
    batcher.start()


class _quiet:
    """Swallow and log a ``PromotionError`` (another replica decided first: nothing to do)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, _tb: object) -> bool:
        if isinstance(exc, PromotionError):
            LOG.warning("%s", exc)
            return True
        return False
