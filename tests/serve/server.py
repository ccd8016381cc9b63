"""An app of the endpoint on a real uvicorn server in a thread, on a free loopback port, always stopped."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI

from mlassets.serve.telemetry import stamped_http


@contextlib.contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` while ``app`` serves; stopped (lifespan ended) on exit."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False,
                                           http=stamped_http()))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def flow(base: str, stop: threading.Event, seen: list[tuple[int, str]], body: dict,
         clients: int = 4) -> list[threading.Thread]:
    """``clients`` threads posting ``body`` to ``/predict`` until ``stop``; each answer's (status, version) kept."""
    import httpx

    def loop() -> None:
        with httpx.Client(base_url=base, timeout=30) as client:
            while not stop.is_set():
                answer = client.post("/predict", json=body)
                seen.append((answer.status_code, answer.json().get("version", answer.text)))

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    return threads


def until(condition, what: str, seconds: float = 90) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
