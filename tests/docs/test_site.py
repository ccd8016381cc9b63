"""The site builds with ``mkdocs build --strict``: a broken link, a missing page or a page left out of the nav
fails the suite (make test and make test-fast)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
