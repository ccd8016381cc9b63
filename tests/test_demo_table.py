"""The demo's summary table names the gate's main metric of the dataset (MAE for flights, log loss for a binary
task) and shows a missing champion as '-'."""

from __future__ import annotations

from mlassets.demo import VersionRow, format_table


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
