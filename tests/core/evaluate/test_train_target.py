"""The training target's statistics read batch by batch equal the in-memory ones: the median exactly (as
``np.median``), whatever the chunk the spill file is read back in, for odd and even counts, ties, signs and
non-finite values."""

from __future__ import annotations

import numpy as np
import pytest

from mlassets.core.evaluate import train_target
from mlassets.core.evaluate.train_target import TrainTarget, streamed


def _columns() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    wide = rng.normal(size=20_001) * 1e3
    wide[rng.random(wide.size) < 0.05] = np.nan
    wide[:3] = [np.inf, -np.inf, -0.0]
    return {
        "normal, odd, with nan and inf": wide,
        "normal, even": rng.normal(size=5_000),
        "integers with many ties": rng.integers(-30, 30, 9_999).astype(float),
        "all equal": np.full(1_234, 12.5),
        "negative only": -rng.exponential(size=777),
        "tiny and huge magnitudes": np.concatenate([rng.normal(size=300) * 1e-300, rng.normal(size=301) * 1e300]),
        "one value": np.array([3.0]),
        "two values": np.array([-1.0, 2.0]),
    }


@pytest.mark.parametrize("chunk, gather", [(1, 1), (64, 100), (1 << 18, 1 << 20)])
@pytest.mark.parametrize("name", list(_columns()))
def test_streamed_equals_in_memory(name, chunk, gather, monkeypatch) -> None:
    monkeypatch.setattr(train_target, "CHUNK", chunk)
    monkeypatch.setattr(train_target, "GATHER", gather)
    y = _columns()[name]
    want, got = TrainTarget.of(y), streamed(np.array_split(y, 7))
    finite = y[np.isfinite(y)]
    assert got.n == want.n == finite.size
    assert got.median == want.median == np.median(finite)
    assert (got.low, got.high) == (finite.min(), finite.max())
    assert got.mean == pytest.approx(want.mean, rel=1e-12, abs=1e-300)


def test_no_finite_value_has_no_statistics() -> None:
    got = streamed([np.array([np.nan, np.inf]), np.array([], dtype=float)])
    assert got.n == 0 and np.isnan(got.median) and np.isnan(got.low)
