"""``mlassets serve``'s start-up line says whether requests are batched, and its own log lines (a champion swapped
or refused) carry their time."""

from __future__ import annotations

import logging
import re
from types import SimpleNamespace

import pytest

from mlassets.cli.serve import LOGGER, stamp_log, start_line
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
