"""The story a user clicks through after the demo, in a real browser (Debian's Chromium through Playwright) against
``mlassets ui`` on other ports than the demo's links were made for: runs named by data version -> the rejected
month red in the partition views, the others by readable key -> the champion's month and its links, which open
through the redirects -> the MLflow model version and run, which link back -> MLflow opened bare on the training
runs -> the failed month's run and the gate's reasons -> the gate check's history by partition.

Screenshots go to ``$MLASSETS_TEST_OUTPUT/ui-story/`` (default ``build/test-output/ui-story/``, git-ignored).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import mlflow
import pytest

from mlassets.core import tracking
from mlassets.core.registry import versions as registry
from tests.browser import chromium_or_skip
from tests.defs.conftest import Demo
from tests.defs.test_ui import _get, _wait, running_ui

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
OUTPUT = Path(os.environ.get("MLASSETS_TEST_OUTPUT", REPO / "build" / "test-output")) / "ui-story"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WAIT_MS = 60_000
RUN_ORIGINS = """{ runsOrError { ... on Runs { results { runId repositoryOrigin {
  repositoryLocationName repositoryName } } } } }"""


def _label(demo: Demo, row: int) -> str:
    return f"{demo.rows[row].month} · {demo.rows[row].commit[:8]}"


def test_demo_runs_carry_version_names_links_and_the_gate_reason(demo: Demo) -> None:
    """What the browser shows, read from the stores: run tags, MLflow names and descriptions, the check's partition."""
    tracking.configure()
    for i, row in enumerate(demo.rows):
        tags = demo.instance.get_run_by_id(row.run_id).tags
        assert tags["mlassets/version_name"] == _label(demo, i) and tags["dagster/partition"] == row.data_version
        assert row.data_version == f"{row.month}.{row.commit[:8]}" and tags["mlassets/data_commit"] == row.commit
        version = registry.get_version(demo.cfg.model.registered_name, i + 1)
        assert version.description.startswith(f"flights · {_label(demo, i)}: gate ") and "**" not in version.description
        assert version.tags["dagster_run_url"].endswith(f"/runs/{row.run_id}")
        run = mlflow.get_run(version.tags["mlflow_run_id"])
        assert run.info.run_name == f"flights · {_label(demo, i)}"
        assert run.data.tags["dagster_run_url"] == version.tags["dagster_run_url"]
    broken, broken_label = demo.rows[2], _label(demo, 2)
    described = registry.get_version(demo.cfg.model.registered_name, 3).description
    assert described.splitlines()[0].startswith(f"flights · {broken_label}: gate rejected it against champion v")
    assert " vs champion " in described.splitlines()[0] and "slice carrier=UA" in described  # first line: a reason
    checks = [e.dagster_event.event_specific_data for e in demo.instance.all_logs(broken.run_id)
              if e.dagster_event and e.dagster_event.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert checks and {c.partition for c in checks} == {broken.data_version}  # the history's Partition column
    gate = next(c for c in checks if c.check_name == "gate_passed")
    assert not gate.passed and gate.description.startswith(f"{_label(demo, 2)}: ")
    training = mlflow.get_run(registry.get_version(demo.cfg.model.registered_name, 3).tags["mlflow_run_id"])
    assert training.info.status == "FINISHED"  # it trained; the gate's verdict is a tag, not a failed run
    assert training.data.tags["gate"] == "rejected"
    assert training.data.tags["mlflow.note.content"].startswith("Rejected: ")
    assert not demo.instance.all_logs(broken.run_id, dg.DagsterEventType.STEP_FAILURE)  # an answer, not a crash


@pytest.fixture
def ui(demo: Demo, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``mlassets ui`` over the demo's stack (no dashboard): (Dagster URL, MLflow URL) once both answer."""
    log = tmp_path / "ui.log"
    with running_ui(demo.home, log) as (proc, port, mlflow_port):
        deadline = time.monotonic() + 120
        _wait(f"http://127.0.0.1:{port}/graphql", {"query": "{ version }"}, deadline, proc, log)
        _wait(f"http://127.0.0.1:{mlflow_port}/api/2.0/mlflow/experiments/search?max_results=1", None, deadline, proc,
              log)
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{mlflow_port}"


def test_the_story_in_a_browser(demo: Demo, ui: tuple[str, str]) -> None:
    """On other ports than the demo's links were made for: the links open (redirected), versions are readable,
    the rejected month is red in the partition views, and MLflow opened bare shows the training runs."""
    chromium = chromium_or_skip()
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (it is pinned in requirements.lock: make test installs it)")
    dagster, mlflow_ui = ui
    assert dagster != demo.old_urls["dagster"] and mlflow_ui != demo.old_urls["mlflow"]  # the ports moved
    live = int(demo.champions[-1])
    champion, broken = _label(demo, live - 1), _label(demo, 2)
    keys = [row.data_version for row in demo.rows]  # 2013-01.1a2b3c4d ...
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1800, "height": 1100})
            shot = lambda name: page.screenshot(path=str(OUTPUT / f"{name}.png"))  # noqa: E731

            page.goto(f"{dagster}/runs")  # every pipeline run is tagged with its version's name
            expect(page.get_by_text(f"mlassets/version_name: {broken}").first).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text("mlassets/pid", exact=False)).to_have_count(0)  # the monitor's tags: hidden
            shot("01-runs-by-version-name")

            page.goto(f"{dagster}/assets/flights/gate_result?view=partitions&status=FAILED")  # nothing red
            expect(page.get_by_text(keys[2], exact=True)).to_have_count(0, timeout=WAIT_MS)
            page.goto(f"{dagster}/assets/flights/gate_result?view=partitions&status=MATERIALIZED")
            for key in keys:  # every candidate's verdict materializes, the rejected month's too
                expect(page.get_by_text(key, exact=True).first).to_be_visible(timeout=WAIT_MS)
            shot("02-every-month-materialized-by-readable-key")

            page.goto(f"{dagster}/assets/flights/gate_result?view=partitions&partition={keys[2]}")
            expect(page.get_by_text("rule: slice carrier=UA").first).to_be_visible(timeout=WAIT_MS)  # first screen
            expect(page.get_by_text("rejected", exact=True).first).to_be_visible()  # the verdict entry
            expect(page.get_by_text("Traceback", exact=False)).to_have_count(0)  # a verdict, not a crash
            shot("02b-rejected-partition-says-why")

            runs = _get(f"{dagster}/graphql", {"query": RUN_ORIGINS})
            results = runs["data"]["runsOrError"]["results"]
            assert len(results) >= 2 * len(keys)  # the demo's ingest and pipeline runs, launched by the CLI
            origin = {"repositoryLocationName": "mlassets", "repositoryName": "__repository__"}
            assert all(r["repositoryOrigin"] == origin for r in results), results
            page.goto(f"{dagster}/overview/activity/timeline")  # listed with the code location's jobs
            expect(page.get_by_text("flights_pipeline").first).to_be_visible(timeout=WAIT_MS)
            shot("02c-overview-timeline-lists-the-cli-runs")

            page.goto(f"{dagster}/assets/flights/champion")  # the champion: its month, and links to MLflow
            expect(page.get_by_text(champion, exact=True).first).to_be_visible(timeout=WAIT_MS)
            model_link = page.locator(f"a[href*='/#/models/flights_arr_delay/versions/{live}?']").first
            run_link = page.locator("a[href*='/#/experiments/'][href*='/runs/']").first
            expect(model_link).to_be_visible()
            model_href, run_href = model_link.get_attribute("href"), run_link.get_attribute("href")
            assert model_href.startswith(demo.old_urls["mlflow"])  # made under the demo's setting
            shot("04-champion-month-and-links")

            page.goto(model_href)  # as recorded: the old address redirects to this MLflow
            expect(page.get_by_text("Registered by Dagster run").first).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text(f"flights · {champion}").first).to_be_visible()
            assert page.url.startswith(mlflow_ui)
            shot("05-mlflow-model-version")

            page.goto(run_href)  # its training run: named by version, linking back to Dagster
            back = page.locator("a[href*='/runs/']", has_text=demo.rows[live - 1].run_id[:8]).first
            expect(back).to_be_visible(timeout=WAIT_MS)
            back_href = back.get_attribute("href")
            assert back_href == f"{demo.old_urls['dagster']}/runs/{demo.rows[live - 1].run_id}"
            shot("06-mlflow-run-links-to-dagster")
            page.goto(back_href)  # the link back opens this Dagster's run page
            expect(page.get_by_text(demo.rows[live - 1].run_id[:8]).first).to_be_visible(timeout=WAIT_MS)
            assert page.url.startswith(dagster)

            page.goto(mlflow_ui)  # opened bare: the training runs, no GenAI welcome, notice or assistant
            for i in range(len(demo.rows)):
                expect(page.get_by_text(f"flights · {_label(demo, i)}").first).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text(f"dagster run {demo.rows[2].run_id[:8]}").first).to_be_visible()
            assert "workflowType=machine_learning" in page.url
            expect(page.get_by_text("MLflow collects usage data")).to_have_count(0)
            expect(page.get_by_text("Welcome to MLflow")).to_have_count(0)
            shot("07-mlflow-opens-on-training-runs")

            page.goto(f"{dagster}/runs/{demo.rows[2].run_id}")  # why the broken month was rejected
            expect(page.get_by_text(f"gate rejected {broken}").first).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text("slice carrier=UA", exact=False).first).to_be_visible()
            shot("08-rejected-run-says-why")

            page.goto(f"{dagster}/assets/flights/gate_result?view=checks")  # the check's history, by partition
            page.get_by_text("Execution history", exact=True).click()
            expect(page.get_by_text(keys[2]).first).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text(f"{broken}: ").first).to_be_visible()  # the check's description: the reasons
            shot("09-gate-check-history-by-partition")
        finally:
            browser.close()
    assert len(list(OUTPUT.glob("0*.png"))) >= 9
