"""The Benchmarks page renders the stored bench results, or says how to produce them."""

from __future__ import annotations

import json
from pathlib import Path

from mlassets.cli.reference.bench import NONE_YET, render_results


def test_no_results_say_how_to_produce_them(tmp_path: Path) -> None:
    assert render_results(tmp_path / "absent") == NONE_YET + "\n"


def test_a_stored_run_is_a_table_with_its_machine_and_date(tmp_path: Path) -> None:
    (tmp_path / "2026-01-02.json").write_text(json.dumps({
        "machine": {"cpus": 2, "gpu": "none"}, "date": "2026-01-02T10:00:00Z",
        "results": [{"name": "store_growth", "measured": "1.02 x", "goal": "<= 1.1 x", "met?": "yes", "detail": "a|b"},
                    {"name": "fleet", "measured": "CRASHED", "goal": "", "met?": "error", "extra": 3}]}))
    (tmp_path / "2025-12-01.json").write_text(json.dumps([{"name": "older", "measured": "2 x"}]))
    text = render_results(tmp_path)
    assert text.index("## 2026-01-02T10:00:00Z") < text.index("## 2025-12-01")  # newest first
    assert "Machine: cpus: 2; gpu: none" in text
    assert "| name | measured | goal | met? | detail | extra |" in text
    assert "| store_growth | 1.02 x | <= 1.1 x | yes | a\\|b |  |" in text
    assert "| older | 2 x |" in text


def test_a_file_that_is_not_results_is_named(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    assert "`broken.json`" in render_results(tmp_path) and "Not readable" in render_results(tmp_path)


def test_the_runner_stored_format_is_read(tmp_path: Path) -> None:
    """``python -m bench`` stores ``{"measured_at", "machine", "results"}`` as ``<UTC time>.json``."""
    (tmp_path / "20261207T120000000000Z.json").write_text(json.dumps({
        "measured_at": "2026-12-07T12:00:00+00:00", "machine": {"cpu": "x86_64", "cores": 2},
        "results": [{"name": "store_growth", "measured": 1.02, "goal": "<= 1.1 x", "met?": "yes"}]}))
    text = render_results(tmp_path)
    assert "## 2026-12-07T12:00:00+00:00" in text and "Machine: cpu: x86_64; cores: 2" in text
    assert "| store_growth | 1.02 | <= 1.1 x | yes |" in text
