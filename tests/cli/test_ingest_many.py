"""``mlassets ingest`` with several ``--partition``: one data version each, in the order given, in one command; a bad
key is refused before anything lands, and a delivery (``--from``) names one partition only."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlassets.cli import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_several_partitions_in_one_command(home: str, tmp_path: Path, capsys) -> None:
    assert cli(capsys, "example", "sales", str(tmp_path / "sales"), "--months", "3")[0] == 0
    config = str(tmp_path / "sales" / "sales.yaml")
    code, _, err = cli(capsys, "ingest", "--config", config, "--partition", "2024-01", "--partition", "2024-13")
    assert code == 2 and "2024-13" in err
    code, out, _ = cli(capsys, "versions", "--config", config)
    assert "2024-01" not in out  # the bad key was refused before the good one landed
    code, _, err = cli(capsys, "ingest", "--config", config, "--partition", "2024-01", "--partition", "2024-02",
                       "--from", str(tmp_path / "sales" / "data" / "sales_2024-01.csv"))
    assert code == 2 and "--from: a delivery is one partition's; got 2 --partition" in err

    code, out, err = cli(capsys, "ingest", "--config", config, "--partition", "2024-02", "--partition", "2024-01",
                         "--partition", "2024-02")
    assert code == 0, err
    assert out.count("data version") == 2
    code, out, _ = cli(capsys, "versions", "--config", config)
    assert [line.split()[1] for line in out.splitlines()[1:]] == ["2024-02", "2024-01"]  # as given, each once
