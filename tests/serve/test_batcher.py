"""Dynamic batching: concurrent requests share a forward pass within the row limit; a lone request on an idle
model runs at once; with batching off each request is its own pass; a request that breaks a pass fails alone."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pandas as pd
import pytest

from mlassets.serve.batcher import Batcher
from mlassets.serve.rows import Rows

LONG_WAIT_MS = 120_000.0  # a request that waited this window would time the test out


class Model:
    """Doubles column x; records the rows of every pass; refuses a pass holding x < 0."""

    def __init__(self) -> None:
        self.passes: list[list[float]] = []

    def __call__(self, frame: pd.DataFrame | Rows) -> tuple[object, int, str]:
        frame = frame.frame() if isinstance(frame, Rows) else frame
        if (frame["x"] < 0).any():
            raise ValueError("x < 0")
        self.passes.append(frame["x"].tolist())
        return (frame["x"] * 2).to_numpy(), time.time_ns(), "7"


def _frame(*values: float) -> pd.DataFrame:
    return pd.DataFrame({"x": list(values)})


async def _with(batcher: Batcher, work):  # noqa: ANN001, ANN202 - a coroutine function
    batcher.start()
    try:
        return await asyncio.wait_for(work(), 60)
    finally:
        await batcher.stop()


def test_a_lone_request_on_an_idle_model_does_not_wait_the_window() -> None:
    model = Model()
    batcher = Batcher(model, max_batch_size=64, wait_ms=LONG_WAIT_MS)
    answer, version, queued, timing = asyncio.run(_with(batcher, lambda: batcher.submit(_frame(1, 2))))
    assert answer.tolist() == [2, 4] and version == "7" and model.passes == [[1, 2]]
    assert (timing.rows, timing.requests) == (2, 1) and queued <= timing.start_ns <= timing.done_ns


def test_requests_on_their_way_are_waited_for_and_merged_into_one_pass() -> None:
    model = Model()
    batcher = Batcher(model, max_batch_size=64, wait_ms=LONG_WAIT_MS)

    async def work():  # noqa: ANN202
        batcher.arriving = 2  # two more requests admitted, still being parsed
        first = asyncio.ensure_future(batcher.submit(_frame(1)))
        await asyncio.sleep(0.05)
        assert not first.done()  # waits for them, not for the window
        batcher.arriving -= 1
        second = asyncio.ensure_future(batcher.submit(_frame(2, 3)))
        await asyncio.sleep(0.05)
        batcher.arriving -= 1
        third = asyncio.ensure_future(batcher.submit(_frame(4)))
        return await asyncio.gather(first, second, third)

    answers = asyncio.run(_with(batcher, work))
    assert model.passes == [[1, 2, 3, 4]]
    assert [a[0].tolist() for a in answers] == [[2], [4, 6], [8]]
    assert {a[3].requests for a in answers} == {3}


def test_requests_checked_as_rows_are_joined_column_by_column_into_one_frame() -> None:
    """The endpoint hands the batcher each request's checked columns (``Rows``); a pass gets them joined column by
    column (no frame built: the preprocessing reads the arrays), in arrival order, and their frame has the column
    types of a frame made at once."""
    seen: list[Rows] = []
    model = Model()

    def run(frame: Rows) -> tuple[object, int, str]:
        seen.append(frame)
        return model(frame)

    batcher = Batcher(run, max_batch_size=64, wait_ms=LONG_WAIT_MS)
    parts = [Rows({"x": np.array([1.0, 2.0]), "c": np.array(["a", None], dtype=object)}),
             Rows({"x": np.array([3.0]), "c": np.array(["b"], dtype=object)})]

    async def work():  # noqa: ANN202
        batcher.arriving = 1
        first = asyncio.ensure_future(batcher.submit(parts[0]))
        await asyncio.sleep(0.05)
        batcher.arriving -= 1
        return await asyncio.gather(first, batcher.submit(parts[1]))

    answers = asyncio.run(_with(batcher, work))
    assert model.passes == [[1.0, 2.0, 3.0]] and [a[0].tolist() for a in answers] == [[2, 4], [6]]
    expected = pd.DataFrame({"x": [1.0, 2.0, 3.0], "c": np.array(["a", None, "b"], dtype=object)})
    assert isinstance(seen[0], Rows) and len(seen[0]) == 3
    pd.testing.assert_frame_equal(seen[0].frame(), expected)
    pd.testing.assert_frame_equal(parts[0][["c"]], expected[["c"]].iloc[:2])


def test_a_pass_holds_at_most_max_batch_size_rows() -> None:
    model = Model()
    batcher = Batcher(model, max_batch_size=4, wait_ms=LONG_WAIT_MS)
    frames = [_frame(i, i + 0.5) for i in range(5)]
    answers = asyncio.run(_with(batcher, lambda: asyncio.gather(*(batcher.submit(f) for f in frames))))
    assert [len(p) for p in model.passes] == [4, 4, 2]
    assert [a[0].tolist() for a in answers] == [[2 * i, 2 * i + 1] for i in range(5)]


def test_with_batching_off_every_request_is_its_own_pass() -> None:
    model = Model()
    batcher = Batcher(model, max_batch_size=64, wait_ms=LONG_WAIT_MS, enabled=False)
    asyncio.run(_with(batcher, lambda: asyncio.gather(*(batcher.submit(_frame(i)) for i in range(3)))))
    assert model.passes == [[0], [1], [2]]


def test_a_request_that_breaks_a_pass_fails_alone() -> None:
    model = Model()
    batcher = Batcher(model, max_batch_size=64, wait_ms=LONG_WAIT_MS)

    async def work():  # noqa: ANN202
        return await asyncio.gather(*(batcher.submit(_frame(x)) for x in (1, -1, 3)), return_exceptions=True)

    good, bad, other = asyncio.run(_with(batcher, work))
    assert isinstance(bad, ValueError) and str(bad) == "x < 0"
    assert (good[0].tolist(), other[0].tolist()) == ([2], [6])
    assert model.passes == [[1], [3]]  # the merged pass failed; each request then ran alone


def test_batching_settings_are_checked_at_load_naming_the_key() -> None:
    import yaml

    from mlassets.core.config import ConfigError, parse_config, shipped_configs

    data = yaml.safe_load(shipped_configs()["flights"].read_text())
    assert parse_config({**data, "serving": {"max_batch_size": 32}}).serving.max_batch_size == 32
    with pytest.raises(ConfigError, match=r"serving.max_batch_size: must be >= 1, got 0"):
        parse_config({**data, "serving": {"max_batch_size": 0}})
    with pytest.raises(ConfigError, match=r"serving.batch_wait_ms: must be between 0 and 10000 ms, got -1"):
        parse_config({**data, "serving": {"batch_wait_ms": -1}})
    with pytest.raises(ConfigError, match=r"serving"):
        parse_config({**data, "serving": {"max_wait": 3}})


def test_every_variant_gets_the_configured_policy_and_waits_for_its_own_arrivals() -> None:
    from mlassets.core.config.serving import ServingConfig

    off = Batcher.of(Model(), ServingConfig(batching=False, max_batch_size=32, batch_wait_ms=7.0))
    assert (off.max_rows, off.wait_s, off.enabled) == (32, 0.007, False)
    model = Model()
    batcher = Batcher.of(model, ServingConfig(max_batch_size=64, batch_wait_ms=10_000))  # the longest allowed

    async def work():  # noqa: ANN202
        arrival = batcher.admit()  # a request on its way to this batcher
        first = asyncio.ensure_future(batcher.submit(_frame(1)))
        await asyncio.sleep(0.05)
        assert not first.done() and batcher.arriving == 1  # the pass waits for it
        arrival.queued()
        arrival.queued()  # once only
        assert batcher.arriving == 0
        return await asyncio.gather(first, batcher.submit(_frame(2)))

    asyncio.run(_with(batcher, work))
    assert model.passes == [[1, 2]]
