"""``mlassets serve``'s start-up line says whether requests are batched, and its own log lines (a champion swapped
or refused) carry their time; the line comes once the port listens, and not at all when it cannot be bound."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from types import SimpleNamespace

import pytest

from mlassets.cli.serve import LOGGER, listening_server, stamp_log, start_line
from mlassets.core.config.serving import ServingConfig
from mlassets.serve.batcher import Batcher


def _app(settings: ServingConfig) -> SimpleNamespace:
    model = SimpleNamespace(name="flights_arr_delay", version="2", basis="gate passed")
    batcher = Batcher.of(lambda frame: frame, settings)
    return SimpleNamespace(state=SimpleNamespace(champion=SimpleNamespace(current=model), batcher=batcher))


@pytest.mark.parametrize(("settings", "said"), [
    (ServingConfig(), "batching on (up to 256 rows a pass, waiting up to 2 ms for more)"),
    (ServingConfig(max_batch_size=64, batch_wait_ms=0.5), "batching on (up to 64 rows a pass, waiting up to 0.5 ms"),
    (ServingConfig(batching=False), "batching off (one forward pass per request: serving.batching false)"),
])
def test_the_start_line_says_whether_requests_are_batched(home: str, settings: ServingConfig, said: str) -> None:
    line = start_line(_app(settings), "http://127.0.0.1:8931", "no token asked (--insecure or loopback)")
    assert line.startswith("serving flights_arr_delay v2 (gate passed) on http://127.0.0.1:8931 (POST /invocations")
    assert f"; {said}" in line and "traces in " in line


def test_swap_lines_carry_their_time_and_level(capsys) -> None:
    logger = logging.getLogger(LOGGER)
    before = list(logger.handlers)
    try:
        stamp_log()
        stamp_log()  # once per process: no line twice
        logger.warning("champion swapped: %s", "flights_arr_delay: v2 -> v1 (gate passed)")
        logger.error("ALERT: %s", "the promotion log is not trusted")
    finally:
        logger.handlers[:] = before
    lines = capsys.readouterr().err.splitlines()
    stamp = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"
    assert len(lines) == 2
    assert re.fullmatch(f"{stamp} WARNING champion swapped: flights_arr_delay: v2 -> v1 \\(gate passed\\)", lines[0])
    assert re.fullmatch(f"{stamp} ERROR ALERT: the promotion log is not trusted", lines[1])


async def _empty(scope, receive, send) -> None:  # an ASGI app; no request reaches it here
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})


def _server(port: int):
    import uvicorn

    config = uvicorn.Config(_empty, host="127.0.0.1", port=port, log_level="critical")
    config.load()
    server = listening_server()(config, "ready")
    server.lifespan = config.lifespan_class(config)  # what uvicorn's serve() sets before its startup()
    return server


def test_the_start_line_comes_once_the_port_accepts(capsys) -> None:
    async def start() -> tuple[str, int]:
        server = _server(0)
        assert capsys.readouterr().out == ""
        await server.startup()
        said = capsys.readouterr().out
        port = server.servers[0].sockets[0].getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # accepted: the line was true
            pass
        await server.shutdown()
        return said, port

    said, port = asyncio.run(start())
    assert said == "ready\n" and port > 0


def test_a_port_in_use_prints_no_start_line(capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(SystemExit):
            asyncio.run(_server(taken.getsockname()[1]).startup())
    assert "ready" not in capsys.readouterr().out
