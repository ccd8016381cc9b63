"""The README is a front door: at most 150 lines, its links lead to pages that exist, and its picture is the
asset graph generated from the code."""

from __future__ import annotations

import re
from pathlib import Path

from mlassets.cli.reference import GRAPH, OUT, README, readme_with

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) <= 150


def test_every_relative_link_leads_to_a_file() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local and all((ROOT / link).is_file() for link in local), [x for x in local if not (ROOT / x).is_file()]
    assert any(link.startswith("docs/tutorials/") for link in local)


def test_its_picture_is_the_generated_graph() -> None:
    text = README.read_text()
    assert readme_with((OUT / GRAPH).read_text(), text) == text, "run python -m mlassets.cli.reference"
    assert readme_with("flowchart LR\n  a --> b\n", text) != text
