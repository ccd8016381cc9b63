"""Results kept and compared: what a measuring run stores, and what ``python -m bench compare`` says of two."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import registry, stored
from bench.__main__ import main
from bench.interval import Interval
from bench.registry import Result, benchmark


@pytest.fixture(autouse=True)
def _isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "REGISTRY", {})


def _entry(name: str, value: float | None, better: str = "lower", low: float | None = None,
           high: float | None = None) -> dict:
    return {"name": name, "goal": "g", "better": better, "target": 1.0, "value": value, "unit": "x", "low": low,
            "high": high, "verdict": "yes", "detail": ""}


def _save(directory: Path, entries: list[dict], second: int, cpu: str = "CPU A", cores: int = 2) -> Path:
    path = stored.save(entries, "table", directory, datetime(2026, 12, 7, 12, 0, second, tzinfo=UTC))
    data = json.loads(path.read_text())
    data["machine"].update(cpu=cpu, cores=cores)  # as if measured on that machine
    path.write_text(json.dumps(data))
    return path


def test_a_measuring_run_stores_its_rows_and_machine_beside_its_table(_results_dir: Path, capsys) -> None:
    @benchmark("ratio_thing", goal="a ratio", better="lower", target=1.5)
    def ratio_thing() -> Result:
        return Result(1.2, "x", "both sides", interval=Interval.of([1.1, 1.2, 1.3]))

    @benchmark("boom", goal="never", better="higher", target=1)
    def boom() -> Result:
        raise RuntimeError("kaput")

    assert main([], modules=()) == 1
    [path] = _results_dir.glob("*.json")
    data = json.loads(path.read_text())
    assert data["machine"]["cores"] > 0 and data["machine"]["cpu"] and "torch" in data["machine"]["libraries"]
    thing, crashed = data["results"]
    assert thing["name"] == "ratio_thing" and thing["value"] == pytest.approx(1.2) and thing["unit"] == "x"
    assert thing["low"] < thing["value"] < thing["high"] and len(thing["ratios"]) == 3 and thing["verdict"] == "yes"
    assert crashed == {"name": "boom", "goal": "never", "better": "higher", "target": 1.0, "value": None,
                       "verdict": "CRASHED", "detail": "RuntimeError: kaput"}
    assert path.with_suffix(".txt").read_text() == capsys.readouterr().out  # the printed table beside it
    assert main(["--smoke"], modules=()) == 1 and len(list(_results_dir.glob("*.json"))) == 1  # smoke: not stored


def test_compare_flags_a_regression_beyond_the_noise_only(_results_dir: Path) -> None:
    older = {"results": [_entry("plain", 1.0), _entry("noisy", 1.0), _entry("up", 2.0, "higher"),
                         _entry("sure", 1.0), _entry("faster", 1.0), _entry("broke", 1.0), _entry("gone", 1.0)]}
    newer = {"results": [_entry("plain", 1.25), _entry("noisy", 1.3, low=0.9, high=1.8),
                         _entry("up", 1.9, "higher"), _entry("sure", 1.3, low=1.1, high=1.5),
                         _entry("faster", 0.5), _entry("broke", None), _entry("new", 1.0)]}
    rows, regressions = stored.compare(older, newer)
    said = {r[0]: (r[3], r[4]) for r in rows}
    assert said == {"plain": ("1.250", "REGRESSION"),  # no interval: worse by more than NOISE
                    "noisy": ("1.300", "worse (noise)"),  # its own interval reaches the old figure
                    "up": ("0.950", "worse (noise)"),  # higher is better: 5% lower is within NOISE
                    "sure": ("1.300", "REGRESSION"),  # the whole interval above the old figure
                    "faster": ("0.500", "better"), "broke": ("-", "crashed")}
    assert regressions == 2


def test_compare_picks_the_newest_before_from_the_same_kind_of_machine(_results_dir: Path, capsys) -> None:
    first = _save(_results_dir, [_entry("a", 1.0)], 1)
    _save(_results_dir, [_entry("a", 9.0)], 2, cpu="CPU B")  # another machine: not compared
    last = _save(_results_dir, [_entry("a", 2.0)], 3)
    assert stored.latest_pair() == (first, last)
    assert main(["compare"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{last.name} over {first.name}\n") and "2.000" in out and "REGRESSION" in out
    assert "1 compared, 1 regression(s)" in out
    main(["compare", str(last), str(_results_dir / "20261207T120002000000Z.json")])
    assert "note: different machines: ('CPU A', 2) vs ('CPU B', 2)" in capsys.readouterr().out


def test_compare_without_results_or_with_a_bad_file_is_a_usage_error(_results_dir: Path, tmp_path: Path,
                                                                     capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["compare"])
    assert exc.value.code == 2 and f"no stored bench results in {_results_dir}" in capsys.readouterr().err
    only = _save(_results_dir, [_entry("a", 1.0)], 1)
    with pytest.raises(SystemExit):
        main(["compare"])
    assert f"{only.name} is the only stored result from this kind of machine (CPU A, 2 cores)" in \
        capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(SystemExit):
        main(["compare", str(bad), str(only)])
    assert f"{bad}: not a stored bench result (no machine or results)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", str(only)])
    assert "give two result files (OLD NEW), or none" in capsys.readouterr().err
