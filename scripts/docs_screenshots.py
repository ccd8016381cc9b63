"""Screenshots for the docs site (docs/img/): the asset graph, the rejected 2013-03 gate_result partition, the
MLflow training run and the dashboard, taken in headless Chromium after a demo in a temporary home.

    .venv/bin/python scripts/docs_screenshots.py [--months 3] [--out docs/img] [--home DIR]

Runs ``mlassets demo --months N`` (its month 2013-03 is the rejected one), then ``mlassets ui`` on free loopback
ports, and stops the UI when done. Debian's Chromium (``make chromium``) is the browser.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MLASSETS = [sys.executable, "-m", "mlassets.cli"]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"{url} did not answer in {seconds:.0f} s")


def rejected_version(env: dict[str, str]) -> str:
    """The partition key of the demo's rejected version (its gate column says reject)."""
    out = subprocess.run([*MLASSETS, "versions"], env=env, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "reject" in line.split():
            return line.split()[0]
    raise SystemExit(f"no rejected version in:\n{out}")


def training_run(env: dict[str, str], version: str) -> tuple[str, str]:
    """(experiment id, run id) of the MLflow training run of ``version``."""
    code = ("import json, mlflow; from mlassets.core import tracking; tracking.configure();"
            "runs = mlflow.search_runs(search_all_experiments=True, output_format='list');"
            f"r = [r for r in runs if {version.split('.')[0]!r} in (r.info.run_name or '')][0];"
            "print(json.dumps([r.info.experiment_id, r.info.run_id]))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"no MLflow training run of {version}:\n{done.stderr[-2000:]}")
    out = done.stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))  # type: ignore[return-value]


def settle(page, path: Path, seconds: float = 60) -> None:
    """Save the page once two pictures two seconds apart are the same (nothing spins or loads any more), or the
    last one after ``seconds``."""
    last = page.screenshot()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        page.wait_for_timeout(2000)
        now = page.screenshot()
        if now == last:
            break
        last = now
    path.write_bytes(last)


def shoot(shots: dict[str, tuple[str, str]], out: Path) -> None:
    """Each shot is (url, a text the page shows once its data arrived): the picture is taken after that text is
    visible, so a loading page is never saved; a page that never shows it fails the script, naming both."""
    from playwright.sync_api import TimeoutError as Timeout
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
                                     headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        for name, (url, shown) in shots.items():
            page.goto(url, wait_until="load", timeout=120_000)  # an SPA that polls never goes idle
            try:
                page.get_by_text(shown).first.wait_for(state="visible", timeout=120_000)
            except Timeout as exc:
                raise SystemExit(f"{name}: {url} did not show {shown!r} in 120 s") from exc
            settle(page, out / f"{name}.png")
            print(f"wrote {out / name}.png  ({url})")
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--months", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--home", type=Path, default=None,
                        help="a home that has run the demo already (else a temporary one, removed after)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mlassets-shots-") as scratch:
        home = args.home or Path(scratch) / "home"
        env = {**os.environ, "MLASSETS_HOME": str(home), "PYTHONPATH": str(ROOT), "MLFLOW_DISABLE_TELEMETRY": "true"}
        for var in ("MLASSETS_CONFIGS", "DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_UI_URLS"):
            env.pop(var, None)
        if args.home is None:
            subprocess.run([*MLASSETS, "demo", "--months", str(args.months)], env=env, check=True, cwd=scratch)
        version = rejected_version(env)
        experiment, run = training_run(env, version)
        dagster, mlflow, dashboard = free_port(), free_port(), free_port()
        ui = subprocess.Popen([*MLASSETS, "ui", "--port", str(dagster), "--mlflow-port", str(mlflow)],
                              env={**env, "MLASSETS_DASHBOARD_PORT": str(dashboard)}, cwd=scratch,
                              start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            for url in (f"http://127.0.0.1:{dagster}/server_info", f"http://127.0.0.1:{mlflow}/health",
                        f"http://127.0.0.1:{dashboard}/_stcore/health"):
                wait_for(url)
            base = f"http://127.0.0.1:{dagster}"
            shoot({
                "asset-graph": (f"{base}/asset-groups/flights_training", "flights_training"),
                "rejected-partition": (f"{base}/assets/flights/gate_result?view=partitions&partition={version}",
                                       version),
                "mlflow-run": (f"http://127.0.0.1:{mlflow}/#/experiments/{experiment}/runs/{run}", run),
                "dashboard": (f"http://127.0.0.1:{dashboard}/", "Verdict:"),
            }, args.out)
        finally:
            os.killpg(ui.pid, signal.SIGTERM)
            try:
                ui.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(ui.pid, signal.SIGKILL)
                ui.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
