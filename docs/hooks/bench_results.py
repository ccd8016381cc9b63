"""MkDocs hook: the Benchmarks page's ``<!-- bench-results -->`` marker becomes the stored results' tables
(``mlassets.cli.reference.bench``), read from ``bench/results/*.json`` each time the site is built."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- bench-results -->"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs' hook signature
    if MARKER not in markdown:
        return markdown
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # this checkout's package, whatever the venv installed
    from mlassets.cli.reference.bench import render_results

    return markdown.replace(MARKER, render_results(ROOT / "bench" / "results"))
