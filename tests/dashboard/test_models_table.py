"""The Models page's tables as a person reads them: run ids as links to their runs' pages, times in readable UTC."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import data
from dashboard.formats import SHORT_RUN_ID, readable_time
from tests.dashboard.conftest import DAGSTER_RUN, MODEL, Stack

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")  # the recorded stack trains

PAGE = Path(__file__).resolve().parents[2] / "dashboard" / "app_pages" / "models.py"
READABLE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$")


def test_times_read_as_utc_minutes_whatever_they_were_written_in() -> None:
    moment = datetime(2026, 12, 7, 14, 3, 59, 123456, tzinfo=UTC)
    assert readable_time(moment.isoformat(timespec="microseconds")) == "2026-12-07 14:03 UTC"  # the promotion log's
    assert readable_time(moment.astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat()) == \
        "2026-12-07 14:03 UTC"
    assert readable_time(moment.timestamp() * 1000) == "2026-12-07 14:03 UTC"  # MLflow's epoch milliseconds
    assert readable_time("2026-12-07T14:03:00") == "2026-12-07 14:03 UTC"  # no zone: the records write UTC
    assert readable_time("(live)") == "(live)" and readable_time("") == "" and readable_time(None) == ""


def test_the_versions_table_links_each_run_to_its_page(stack: Stack) -> None:
    import mlflow

    versions = data.versions(MODEL)
    table = data.version_table(versions)
    assert "mlflow_run_id" not in table.columns and "dagster_run_id" not in table.columns  # links, not bare hex
    assert table["registered"].map(READABLE.match).all()
    run = mlflow.MlflowClient().get_run(versions["mlflow_run_id"][0]).info
    assert table["mlflow_run"][0] == \
        f"http://127.0.0.1:5000/#/experiments/{run.experiment_id}/runs/{run.run_id}?workflowType=machine_learning"
    assert table["dagster_run"].tolist() == [f"http://127.0.0.1:3000/runs/{DAGSTER_RUN}"] * len(versions)
    # the page shows each link by its run's short id (the column's display_text; JS and Python read it alike)
    assert re.search(SHORT_RUN_ID, table["mlflow_run"][0])[1] == run.run_id[:8]
    assert re.search(SHORT_RUN_ID, table["dagster_run"][0])[1] == DAGSTER_RUN[:8]


def test_a_run_mlflow_does_not_know_gets_no_link(stack: Stack) -> None:
    unknown = pd.DataFrame([{"version": 1, "data_version": "", "registered": "", "gate_passed": True,
                             "gate_summary": "", "mlflow_run_id": "0" * 32, "dagster_run_id": ""}])
    table = data.version_table(unknown)
    assert table.loc[0, "mlflow_run"] == "" and table.loc[0, "dagster_run"] == ""


def test_the_models_page_shows_links_and_readable_times(stack: Stack) -> None:
    at = AppTest.from_file(str(PAGE), default_timeout=120).run()
    assert not at.exception, at.exception
    versions = next(d for d in at.dataframe if "mlflow_run" in d.value.columns)
    config = json.loads(versions.proto.columns)
    for column in ("mlflow_run", "dagster_run"):
        assert config[column]["type_config"] == {"type": "link", "display_text": SHORT_RUN_ID}
    history = next(d.value for d in at.dataframe if "action" in d.value.columns)
    assert history["at"].map(READABLE.match).all()
    assert history["live_until"].tolist()[-1] == "(live)" and READABLE.match(history["live_until"].tolist()[0])
    forced = next(m.value for m in at.markdown if m.value.startswith("- **force-promote**"))
    assert re.search(r" at \d{4}-\d\d-\d\d \d\d:\d\d UTC: hotfix", forced)
