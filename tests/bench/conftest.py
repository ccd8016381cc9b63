"""Every bench test stores its results (``bench.stored``) in its own temporary directory, never in bench/results."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.stored import RESULTS_ENV


@pytest.fixture(autouse=True)
def _results_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "results"))
    return tmp_path / "results"
