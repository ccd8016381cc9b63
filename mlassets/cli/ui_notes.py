"""What ``mlassets ui`` says at start: what it starts, how long the last start took until each UI answered (kept in
``$MLASSETS_HOME/ui_ready.json``), and the earlier addresses that links recorded before may point at."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from mlassets.core import paths, ui_urls
from mlassets.host.links import LOOPBACK


def old_links_note(urls: ui_urls.UiUrls) -> str:
    """The earlier loopback addresses that links may still point at, and how to make them open ('' when none)."""
    olds = [f"{old} ({kind})" for kind, found in urls.moved().items() for old in found
            if urlsplit(old).hostname in LOOPBACK]
    if not olds:
        return ""
    return (f"note: links recorded before under {', '.join(olds)} do not open while nothing serves there; start "
            "mlassets ui on those ports, or add --redirect-old-links to answer there with a redirect to here")


def plan_text(planned: list[tuple[str, str]], last: dict[str, float], timeout_s: float) -> str:
    """What ``mlassets ui`` starts (``(name, url)`` of each UI), and how long the last start took until each
    answered."""
    uis = ", ".join(f"{name} on {url}" for name, url in planned)
    took = [f"{name} {last[name]:.0f} s" for name, _ in planned if name in last]
    when = (f"the last start was ready in: {', '.join(took)}" if took else
            f"a first start takes longest (each says when it is ready; at most {timeout_s:.0f} s)")
    return (f"starting {uis}; beside them the home's code server (a free loopback port), the Dagster daemon and "
            f"the run monitor; {when}")


def _ready_file() -> Path:
    return paths.home() / "ui_ready.json"


def last_ready() -> dict[str, float]:
    """Seconds each UI took to answer at the last start (empty when unknown)."""
    try:
        found = json.loads(_ready_file().read_text())
        return {str(k): float(v) for k, v in found.items()} if isinstance(found, dict) else {}
    except (OSError, ValueError, TypeError):
        return {}


def note_ready(seconds: dict[str, float]) -> None:
    """Keep how long each UI took, for the next start's line."""
    try:
        _ready_file().write_text(json.dumps(seconds, sort_keys=True))
    except OSError:
        pass  # a hint for the next start only
