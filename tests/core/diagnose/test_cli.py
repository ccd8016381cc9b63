"""``mlassets diagnose``: a run folder, a run id under the home, the worked examples, an empty home."""

from __future__ import annotations

import shutil
from pathlib import Path

from mlassets.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "telemetry"


def test_diagnose_a_folder_a_run_id_and_an_example(home: str, capsys) -> None:
    assert main(["diagnose", str(FIXTURES / "slow_loader")]) == 0
    assert "verdict: input-bound" in capsys.readouterr().out
    run = Path(home) / "work" / "flights" / "train" / "0123456789abcdef" / "abcd1234" / "telemetry"
    shutil.copytree(FIXTURES / "slow_rank_compute", run)
    assert main(["diagnose"]) == 0 and "abcd1234" in capsys.readouterr().out
    assert main(["diagnose", "abcd1234"]) == 0
    assert "verdict: straggler: rank 1, compute (its device)" in capsys.readouterr().out
    assert main(["diagnose", "2013-03.01234567"]) == 0  # the data version's partition key names it too
    assert "verdict: straggler: rank 1" in capsys.readouterr().out
    assert main(["diagnose", "--example", "straggler"]) == 0
    assert "rank 3" in capsys.readouterr().out
    assert main(["diagnose", "nosuchrun"]) == 2


def test_diagnose_with_nothing_recorded(home: str, capsys) -> None:
    assert main(["diagnose"]) == 1
    assert "nothing recorded yet" in capsys.readouterr().out
