"""Where people open the three UIs (Dagster, MLflow, the dashboard): one setting that every link is made from.

Read in this order:

1. ``$MLASSETS_UI_URLS``: a deployment's public addresses, ``dagster=https://…,mlflow=https://…,dashboard=https://…``
   (the ones not named keep the next source's);
2. ``$MLASSETS_HOME/ui.json``: written by ``mlassets ui`` with the addresses it serves, so the demo, the sensors,
   the daemon and the dashboard link to the ports the UIs really listen on;
3. ``http://127.0.0.1:3000`` (Dagster), ``:5000`` (MLflow), ``:8501`` (the dashboard).

``ui.json`` also remembers the addresses it held before (``previous``): links recorded then still point there, so
``mlassets ui`` answers on those that are free with a redirect to where the UI is now (``mlassets.host.links``).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from mlassets.core import paths

ENV = "MLASSETS_UI_URLS"
FILE = "ui.json"
KINDS = ("dagster", "mlflow", "dashboard")
DEFAULTS = {"dagster": "http://127.0.0.1:3000", "mlflow": "http://127.0.0.1:5000", "dashboard": "http://127.0.0.1:8501"}
KEEP_PREVIOUS = 5  # earlier addresses remembered per UI


class UiUrlsError(ValueError):
    """The setting does not parse: names the source and the value."""


@dataclass(frozen=True)
class UiUrls:
    dagster: str
    mlflow: str
    dashboard: str
    previous: dict[str, list[str]] = field(default_factory=dict)  # kind -> earlier addresses, newest first
    mlflow_from_tracking: bool = False  # no setting named MLflow's UI: an http tracking server's own address

    def of(self, kind: str) -> str:
        return str(getattr(self, kind))

    def moved(self) -> dict[str, list[str]]:
        """Kind -> the earlier addresses that links may still point at (the defaults among them once a setting
        replaced them: ``save`` remembers them), not the current one."""
        return {kind: [u for u in dict.fromkeys(self.previous.get(kind, [])) if u != self.of(kind)] for kind in KINDS}


def _clean(url: str, where: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UiUrlsError(f"{where}: {url!r} is not an http(s) address such as http://127.0.0.1:3000")
    return url.strip().rstrip("/")


def parse(text: str, where: str = ENV) -> dict[str, str]:
    """``dagster=URL,mlflow=URL,dashboard=URL`` (commas or spaces between) as a mapping, each address checked."""
    out: dict[str, str] = {}
    for item in text.replace(",", " ").split():
        kind, sep, url = item.partition("=")
        if not sep or kind not in KINDS:
            raise UiUrlsError(f"{where}: {item!r} is not one of {', '.join(f'{k}=URL' for k in KINDS)}")
        out[kind] = _clean(url, f"{where} {kind}")
    return out


def settings_file() -> Path:
    return paths.home() / FILE


def _from_file(path: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    if not path.is_file():
        return {}, {}
    try:
        doc = json.loads(path.read_text())
        urls = {k: _clean(doc[k], f"{path} {k}") for k in KINDS if doc.get(k)}
        previous = {k: [_clean(u, f"{path} previous.{k}") for u in v]
                    for k, v in (doc.get("previous") or {}).items() if k in KINDS}
    except (ValueError, TypeError, AttributeError) as exc:
        raise UiUrlsError(f"{path}: not a UI address file ({exc}); remove it and start mlassets ui again") from None
    return urls, previous


def ui_urls() -> UiUrls:
    """The addresses links are made from (see the module's docstring for the order)."""
    saved, previous = _from_file(settings_file())
    told = parse(os.environ.get(ENV, ""))
    chosen = {**DEFAULTS, **saved, **told}
    from_tracking = "mlflow" not in saved and "mlflow" not in told
    return UiUrls(**chosen, previous=previous, mlflow_from_tracking=from_tracking)


def save(dagster: str, mlflow: str, dashboard: str) -> UiUrls:
    """Make these the addresses links are made from (``mlassets ui`` does, with its ports); the ones they replace
    are remembered, so links recorded under them can still be redirected."""
    path = settings_file()
    saved, previous = _from_file(path)
    new = {"dagster": _clean(dagster, "dagster"), "mlflow": _clean(mlflow, "mlflow"),
           "dashboard": _clean(dashboard, "dashboard")}
    for kind in KINDS:
        before = [saved.get(kind, DEFAULTS[kind]), *previous.get(kind, [])]
        previous[kind] = [u for u in dict.fromkeys(before) if u != new[kind]][:KEEP_PREVIOUS]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{FILE}.", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        json.dump({**new, "previous": previous}, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return ui_urls()


def dagster_run(run_id: str) -> str:
    """A Dagster run's page."""
    return f"{ui_urls().dagster}/runs/{run_id}"


def dashboard_page(page: str) -> str:
    """A page of the dashboard (``bottlenecks?run=…``)."""
    return f"{ui_urls().dashboard}/{page.lstrip('/')}"
