"""The demo: its summary table names the dataset's gate metric (MAE for flights, log loss for a binary task) and
shows a missing champion as '-'; only the flights demo has a broken month by default."""

from __future__ import annotations

from mlassets.cli.demo import VersionRow, format_table


def _row(metric: str, candidate: float, champion: float | None, decision: str = "pass") -> VersionRow:
    return VersionRow(month="2024-W03", data_version="ab" * 32, metric=metric, candidate_metric=candidate,
                      champion_metric=champion, decision=decision, reasons=[] if decision == "pass" else ["why"],
                      champion_version="1", seconds=1.0, run_id="r", success=decision == "pass")


def test_regression_table() -> None:
    header, first, second = format_table([_row("mae", 18.26, None), _row("mae", 17.5, 18.26, "reject")]).splitlines()
    assert [c.strip() for c in header.split("  ") if c.strip()][:4] == ["month", "data version", "candidate MAE",
                                                                      "champion MAE"]
    assert "18.26" in first and first.split()[3] == "-"
    assert second.split()[2:5] == ["17.50", "18.26", "reject"] and second.endswith("why")


def test_binary_table_uses_log_loss_with_four_decimals() -> None:
    header, row = format_table([_row("logloss", 0.338209, 0.386837)]).splitlines()
    assert "candidate log loss" in header and "champion log loss" in header
    assert row.split()[2:4] == ["0.3382", "0.3868"]


def test_demo_of_another_dataset_has_no_broken_month_unless_asked(home: str, capsys) -> None:
    from mlassets.cli import main

    assert main(["demo", "--config", "orders_late", "--months", "1", "--broken-month", "2013-03"]) == 2
    assert "--broken-month: '2013-03' is not one of the demo months ['2024-W01']" in capsys.readouterr().err
    assert main(["demo", "--config", "orders_late", "--months", "1"]) == 1  # the exit code tells the truth
    captured = capsys.readouterr()
    assert "broken data day" not in captured.out
    assert "orders_late__features: ValueError: features: the train split is empty" in captured.out  # one week
    assert "1 of 1 versions failed before the gate: 2024-W01 (error)" in captured.err
