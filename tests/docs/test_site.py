"""The site builds with ``mkdocs build --strict``: a broken link, a missing page or a page left out of the nav
fails the suite (make test and make test-fast)."""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, env=env, timeout=300)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "reference" / "config.html").is_file()
    assert "mermaid" in (tmp_path / "site" / "concepts" / "asset-graph.html").read_text()


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The site's sources in a scratch folder, to break."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    return tmp_path


def test_a_broken_link_fails_the_build(copy: Path) -> None:
    page = copy / "docs" / "how-to" / "roll-back.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    done = build(copy, copy / "site")
    assert done.returncode == 1 and "no-such-page.md" in done.stderr


def test_a_missing_page_fails_the_build(copy: Path) -> None:
    (copy / "docs" / "how-to" / "tune.md").unlink()
    done = build(copy, copy / "site")
    assert done.returncode == 1 and "how-to/tune.md" in done.stderr


def test_a_page_left_out_of_the_nav_fails_the_build(copy: Path) -> None:
    (copy / "docs" / "how-to" / "stray.md").write_text("# Stray\n")
    done = build(copy, copy / "site")
    assert done.returncode == 1 and "stray.md" in done.stderr


def _recipe(target: str) -> list[str]:
    """The command lines of a Makefile target's recipe."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    return [line.strip() for line in itertools.takewhile(lambda x: x.startswith("\t"), lines[start + 1:])]


def test_make_test_and_test_fast_build_the_site_strictly() -> None:
    for target in ("test", "test-fast"):
        recipe = _recipe(target)
        build_at = next(i for i, line in enumerate(recipe) if "mkdocs build --strict" in line)
        assert build_at < next(i for i, line in enumerate(recipe) if "$(PYTEST)" in line), target


def test_make_docs_serves_the_site_on_loopback(tmp_path: Path) -> None:
    (command,) = _recipe("docs")
    assert re.search(r"mkdocs serve -a 127\.0\.0\.1:\d+$", command), command
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = shlex.split(re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", command).replace("$(BIN)/mkdocs", "mkdocs"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", *args, "--no-livereload"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        page = ""
        for _ in range(240):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=5) as answer:
                    page = answer.read().decode()
                break
            except OSError:
                assert proc.poll() is None, "mkdocs serve stopped"
                time.sleep(0.5)
        assert "<title>" in page and "mlassets" in page
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
