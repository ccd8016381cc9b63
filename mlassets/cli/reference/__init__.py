"""The reference pages of the documentation site, generated from the code: ``python -m mlassets.cli.reference``
writes them under ``docs/reference/`` (``--check`` compares instead, exit 1 when a page is stale).

Each page has one source: config keys from the config dataclasses, the command line from the parser, the HTTP API
from the endpoint's OpenAPI, environment variables from ``mlassets.core.env_vars``, metrics from the
endpoint's Prometheus registry, assets and checks from the Definitions of the shipped configs. Importing this
package builds nothing; ``render_all`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

DOCS = Path(__file__).resolve().parents[3] / "docs"
OUT = DOCS / "reference"
README = DOCS.parent / "README.md"
GRAPH = "asset-graph.mmd"  # also the README's one picture: its first mermaid block


def _pages() -> dict[str, Callable[[], str]]:
    from mlassets.cli.reference import assets, cli_page, config_keys, environment, http_api, metrics

    return {"config.md": config_keys.render, "cli.md": cli_page.render, "http-api.md": http_api.render,
            "environment.md": environment.render, "metrics.md": metrics.render, "assets.md": assets.render,
            "asset-graph.mmd": assets.render_graph}


def render_all() -> dict[str, str]:
    """Page file name -> its Markdown."""
    return {name: render() for name, render in _pages().items()}


def readme_with(graph: str, text: str) -> str:
    """The README with its first ```mermaid block replaced by ``graph``."""
    start = text.index("```mermaid\n") + len("```mermaid\n")
    return text[:start] + graph + text[text.index("```", start):]


def stale(pages: dict[str, str], out: Path = OUT) -> list[str]:
    """The pages whose committed text differs from ``pages`` (or is missing)."""
    return sorted(n for n, text in pages.items() if not (out / n).is_file() or (out / n).read_text() != text)


def write(pages: dict[str, str], out: Path = OUT) -> list[str]:
    """Write the pages that changed; return their names."""
    changed = stale(pages, out)
    out.mkdir(parents=True, exist_ok=True)
    for name in changed:
        (out / name).write_text(pages[name])
    return changed
