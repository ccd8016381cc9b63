"""A real browser: Debian's Chromium through Playwright against ``streamlit run`` on 127.0.0.1, every page.

Screenshots of every page go to ``$MLASSETS_TEST_OUTPUT/dashboard/`` (default ``build/test-output/dashboard/``
in the repository, git-ignored). Chromium comes from ``make test`` (apt); without it the test fails in CI and
skips, saying why, elsewhere.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlassets.cli.ui import dashboard_command
from tests.browser import chromium_or_skip
from tests.dashboard.conftest import REPO, Stack

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")  # the recorded stack trains

OUTPUT = Path(os.environ.get("MLASSETS_TEST_OUTPUT", REPO / "build" / "test-output")) / "dashboard"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# page path -> texts the page must show (its key elements on the recorded stack)
PAGES = {
    "bottlenecks": ["Bottlenecks", "Verdict:", "Next steps", "Step time per rank over steps"],
    "stragglers": ["Stragglers", "Per-rank distributions"],
    "scaling": ["Scaling and cost", "speed-up = GPUs × 0.85^log2(GPUs); ₹250 per GPU-hour", "On-demand versus spot"],
    "models": ["Models and gate", "Promotion history", "hotfix for the EWR outage", "Slices the gate could not judge"],
    "capacity": ["Capacity planner", "Components", "Bottlenecks to plan for"],
    "serving": ["Serving latency", "Where the extra p99 time goes"],
}


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(stack: Stack) -> Iterator[str]:
    port = _free_port()
    command = [*dashboard_command("127.0.0.1", port), "--server.fileWatcherType", "none"]  # as `mlassets ui` does
    proc = subprocess.Popen(command, cwd=REPO, env={**os.environ, "MLASSETS_HOME": str(stack.home)},
                            preexec_fn=_default_signals, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:  # poll the health endpoint: no fixed sleep
            assert proc.poll() is None, "streamlit exited early"
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                assert time.monotonic() < deadline, "streamlit did not become ready"
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# page -> a picker and the data version it shows, by its readable key (never hex)
VERSIONS = {"models": ("Gate result of version", "v2 · 2013-02.22222222"),
            "bottlenecks?run=aaaa1111": ("Data version", "2013-01.aaaa1111")}
# links as other views record them (candidate_model's metadata) -> the page they must open, and what it shows
LINKS = {
    "": ("bottlenecks", "Verdict:"),  # the root forwards to Bottlenecks at its own URL
    "bottlenecks?run=aaaa1111": ("bottlenecks?run=aaaa1111", "Verdict: input-bound"),
    "bottlenecks?run=cccc3333": ("bottlenecks?run=cccc3333", "Verdict: compute-bound"),
    "stragglers?run=dddd4444": ("stragglers?run=dddd4444", "One rank: nothing to compare"),
    "stragglers?run=bbbb2222": ("stragglers?run=bbbb2222", "Straggler: rank 1, input path"),
}


def _no_error_page(page) -> None:  # noqa: ANN001 - a Playwright page
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.get_by_test_id("stAppDeployButton")).to_have_count(0)  # client.toolbarMode: no "Deploy"


@pytest.mark.e2e  # a real Chromium through every page: 20 s, outside the inner loop
def test_every_page_in_chromium(server: str) -> None:
    chromium = chromium_or_skip()
    from playwright.sync_api import expect, sync_playwright

    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            for path, texts in PAGES.items():
                page.goto(f"{server}/{path}")  # every page by its own URL
                main = page.locator("section.stMain, [data-testid='stMain']").first
                for text in texts:
                    expect(main.get_by_text(text, exact=False).filter(visible=True).first).to_be_visible(timeout=60_000)
                _no_error_page(page)
                if path != "capacity":  # charts: plotly drew them
                    expect(main.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)
                # tables and charts are grey placeholders until the browser has loaded their code: wait for them all
                expect(main.get_by_test_id("stSkeleton")).to_have_count(0, timeout=60_000)
                expect(main.get_by_test_id("stDataFrame").first.locator("canvas").first).to_be_visible()
                page.screenshot(path=str(OUTPUT / f"{path}.png"), full_page=True)
            for link, (landing, text) in LINKS.items():
                page.goto(f"{server}/{link}")
                main = page.locator("section.stMain, [data-testid='stMain']").first
                expect(main.get_by_text(text, exact=False).filter(visible=True).first).to_be_visible(timeout=60_000)
                expect(page).to_have_url(re.compile("^" + re.escape(f"{server}/{landing}")), timeout=30_000)
                _no_error_page(page)
            for path, (picker, shown) in VERSIONS.items():
                page.goto(f"{server}/{path}")
                combobox = page.get_by_role("combobox", name=picker)
                expect(combobox).to_match_aria_snapshot(f'- combobox "{picker}": {shown}', timeout=60_000)
        finally:
            browser.close()
    assert sorted(p.name for p in OUTPUT.glob("*.png")) >= sorted(f"{p}.png" for p in PAGES)
