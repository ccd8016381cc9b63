"""The endpoint: FastAPI routes over the batcher, the champion and the telemetry.

``POST /invocations`` speaks MLflow's scoring protocol (``dataframe_split``/``dataframe_records`` in,
``{"predictions": [...]}`` out, so an ``mlflow models serve`` client works unchanged); ``POST /predict`` takes
``{"rows": [...]}``. Both answer the model's name and version, and the trace id (also the ``x-trace-id`` header).
During an online test (``serving.online``) a canary answers its share of requests; ``GET /online`` shows the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pandas as pd
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from mlassets.core.config.serving import ServingConfig
from mlassets.core.diagnose.host import Sampler, on_thread
from mlassets.core.train.outputs import class_frame
from mlassets.serve import body, rows
from mlassets.serve.batcher import Batcher, Stopped
from mlassets.serve.features import FeatureLookup
from mlassets.serve.online_router import Online, fixed
from mlassets.serve.openapi import install
from mlassets.serve.swap import Champion
from mlassets.serve.telemetry import FIRST_BYTE, Metrics, RequestTrace

LOG = logging.getLogger("mlassets.serve")
TRACE_HEADER = "x-trace-id"
LOOKUP_THREADS = 8  # feature lookups that may wait on the store at once


def forward(champion: Champion) -> Callable[[pd.DataFrame | rows.Rows], tuple[Any, int, str]]:
    """One forward pass of the current champion (read once per pass: a swap never splits a batch); checked rows
    go to the preprocessing as their column arrays, with no frame built."""
    def run(frame: pd.DataFrame | rows.Rows) -> tuple[Any, int, str]:
        model = champion.current
        bundle = model.bundle
        x_cat, x_num = bundle.preprocessor.transform(frame.columns if isinstance(frame, rows.Rows) else frame)
        preprocessed = time.time_ns()
        out = bundle.forward(x_cat, x_num)
        answer = class_frame(bundle.classes, out) if bundle.task == "multiclass" else out
        return answer, preprocessed, model.version
    return run


def create_app(champion: Champion, schema: rows.Schema, settings: ServingConfig, poll: bool = True,
               lookup: FeatureLookup | None = None) -> FastAPI:
    metrics = Metrics()
    batcher = Batcher.of(forward(champion), settings, on_batch=metrics.batch)
    tests = Online(champion.name, settings.online, lambda model: Batcher.of(forward(fixed(model)), settings), metrics)
    champion.pollers.append(tests.poll)
    if lookup is not None:
        champion.pollers.append(lookup.refresh)  # a new data version's weather, once ingested
    champion.on_swap = lambda outcome, _message: metrics.swaps.labels(outcome).inc()
    metrics.version.labels(champion.name).set(float(champion.current.version))
    client = httpx.AsyncClient(timeout=settings.downstream_timeout_ms / 1000) if settings.downstream_url else None
    # lookups off the event loop: a slow one holds one of these threads, never the other requests
    lookups = ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="mlassets-lookup") if lookup is not None else None

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        batcher.start()
        tests.loop = asyncio.get_running_loop()
        if poll:
            champion.start(settings.swap_poll_s)
        try:
            yield
        finally:
            champion.stop()
            await tests.stop()
            await batcher.stop()
            if lookups is not None:
                lookups.shutdown(wait=False, cancel_futures=True)
            if client is not None:
                await client.aclose()

    app = FastAPI(title=f"mlassets serve {champion.name}", lifespan=lifespan, docs_url=None, redoc_url=None,
                  telemetry={"tracing": False, "metrics": False, "logs": False})  # our own spans, one root each
    app.state.batcher, app.state.champion, app.state.metrics, app.state.online = batcher, champion, metrics, tests
    app.state.lookup = lookup
    host = Sampler()

    async def score(request: Request, route: str, parse: Callable[[Any], list]) -> Response:
        start = time.time_ns()
        arrived = min(request.scope.get(FIRST_BYTE) or start, start)  # its first bytes read (``stamped_http``)
        span = RequestTrace(arrived, route)
        headers = {TRACE_HEADER: span.trace_id}
        status, answer, content = 200, {}, b""
        run = tests.running  # read once: the test may end while this request runs
        to_candidate = run is not None and (run.variant == "shadow" or run.take())
        canary = to_candidate and run is not None and run.variant == "canary"
        own = None if canary else batcher.admit()  # each batcher waits for the requests on their way to it
        theirs = run.batcher.admit() if run is not None and to_candidate else None
        variant, retrieval = "champion", None
        try:
            body.check_type(request)
            received = await body.read(request, settings.max_body_bytes)
            start = time.time_ns()  # received: from the first bytes to the whole body in the handler
            span.stage("receive", arrived, start)
            cpu = time.thread_time_ns()  # the loop thread's CPU for this request's own (synchronous) work
            records = parse(body.parse_json(received))
            parsed_cpu = time.thread_time_ns() - cpu
            if lookup is not None:  # rows that give a table's key instead of its columns
                looked_at = time.time_ns()
                (records, looked), looked_cpu = await asyncio.get_running_loop().run_in_executor(
                    lookups, on_thread, lookup.fill, records)
                if looked:
                    retrieval = (looked_at, time.time_ns(), looked, looked_cpu)
            cpu = time.thread_time_ns()
            frame = rows.to_rows(records, schema, settings.max_rows,  # one DataFrame per pass, not per request
                                 settings.ignore_extra_columns)
            checked_cpu = time.thread_time_ns() - cpu
            if own is not None:
                own.queued()
            metrics.queue_depth.set(batcher.depth + 1)
            predicted = None
            if canary and run is not None and theirs is not None:
                theirs.queued()
                try:
                    predicted, version, queued_ns, timing = await run.batcher.submit(frame)
                    tests.scored(run, "candidate", queued_ns, timing.done_ns, predicted, frame, span.trace_id)
                    variant = "canary"
                except Stopped:  # the test ended while this request waited: the champion answers it
                    pass
                except Exception:  # noqa: BLE001 - counted against the canary; the champion answers instead
                    LOG.exception("canary v%s failed on trace %s", run.test.candidate, span.trace_id)
                    tests.failed(run, "candidate")
            if predicted is None:
                try:
                    predicted, version, queued_ns, timing = await batcher.submit(frame)
                except Exception:
                    if run is not None:
                        tests.failed(run, "champion")
                    raise
                if run is not None:
                    tests.scored(run, "champion", queued_ns, timing.done_ns, predicted, frame, span.trace_id)
                    if run.variant == "shadow" and theirs is not None:
                        tests.shadow(run, frame, span.trace_id, theirs)  # its task queues the arrival
                        theirs = None
            cpu = time.thread_time_ns()
            if retrieval is None:
                span.stage("preprocessing", start, queued_ns, parsed_cpu + checked_cpu, rows=len(frame))
            else:  # laid end to end: parsing, the lookup, then the rows checked
                span.stage("preprocessing", start, retrieval[0], parsed_cpu, rows=len(frame))
                span.stage("feature_retrieval", retrieval[0], retrieval[1], retrieval[3], rows=retrieval[2])
                span.stage("preprocessing", retrieval[1], queued_ns, checked_cpu)
            span.batch(queued_ns, timing)
            answer = {"predictions": rows.predictions(predicted), "model": champion.name, "version": version,
                      "trace_id": span.trace_id}
            content = json.dumps(answer).encode()  # from the pass's end: the answer handed back, then serialized
            span.stage("postprocessing", timing.done_ns, time.time_ns(), time.thread_time_ns() - cpu)
            if client is not None:
                down = time.time_ns()
                reply = await client.get(settings.downstream_url)
                span.stage("downstream", down, time.time_ns(), status=reply.status_code)
                reply.raise_for_status()
        except rows.BadRequest as exc:
            status, answer = exc.status, {"error": str(exc), "trace_id": span.trace_id}
            metrics.errors.labels(exc.kind).inc()
        except httpx.HTTPError as exc:
            status = 504 if isinstance(exc, httpx.TimeoutException) else 502
            answer = {"error": f"the downstream call to {settings.downstream_url} failed: {type(exc).__name__}",
                      "trace_id": span.trace_id}
            metrics.errors.labels("downstream").inc()
        except Exception:  # noqa: BLE001 - logged with the trace id; the client gets a sentence, not a traceback
            LOG.exception("request %s failed", span.trace_id)
            status, answer = 500, {"error": "the model failed on this request; the server log has the trace "
                                            f"{span.trace_id}", "trace_id": span.trace_id}
            metrics.errors.labels("internal").inc()
        finally:
            for arrival in (own, theirs):
                if arrival is not None:
                    arrival.queued()
            metrics.queue_depth.set(batcher.depth)
        if status != 200:
            content = json.dumps(answer).encode()
        end = time.time_ns()
        span.end(end, status=status, variant=variant, **host.sample().attributes())
        metrics.requests.labels(route, str(status), variant).inc()
        metrics.latency.labels(route, variant).observe((end - arrived) / 1e9)
        return Response(content, status, headers, media_type="application/json")

    async def invocations(request: Request) -> Response:
        return await score(request, "invocations", rows.mlflow_records)

    async def predict(request: Request) -> Response:
        return await score(request, "predict", rows.plain_records)

    # Starlette routes: the request as it came, without FastAPI's parameter solving on every request
    app.add_route("/invocations", invocations, methods=["POST"])
    app.add_route("/predict", predict, methods=["POST"])
    install(app, schema)  # the two routes above, in GET /openapi.json

    @app.get("/health")
    async def health() -> dict[str, str]:
        """Answers while the process lives."""
        return {"status": "ok"}

    @app.get("/ready")
    async def ready() -> JSONResponse:
        """The version being served, on what basis, and the columns it takes; 503 until the batcher runs."""
        model = champion.current
        ok = batcher.running
        return JSONResponse({"ready": ok, "model": model.name, "version": model.version, "basis": model.basis,
                             "columns": schema.columns}, 200 if ok else 503)

    @app.get("/online")
    async def online_test() -> dict[str, Any]:
        """The online test in progress (canary or shadow) and each variant's figures."""
        return tests.state()

    @app.get("/metrics")
    async def prometheus() -> Response:
        """Prometheus text: requests, latency, queue depth, batches, errors, swaps, the served version."""
        metrics.queue_depth.set(batcher.depth)
        metrics.version.labels(champion.name).set(float(champion.current.version))
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
