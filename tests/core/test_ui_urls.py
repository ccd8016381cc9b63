"""The one UI setting every link is made from, and the redirects that keep links made under an earlier one open."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from mlassets.core import ui_urls
from mlassets.host.links import start_redirects


def test_defaults_then_the_file_mlassets_ui_writes_then_the_environment(home: str, monkeypatch) -> None:
    assert ui_urls.ui_urls().of("dagster") == "http://127.0.0.1:3000"
    urls = ui_urls.save("http://127.0.0.1:3917/", "http://127.0.0.1:5917", "http://127.0.0.1:8517")
    assert (urls.dagster, urls.mlflow, urls.dashboard) == ("http://127.0.0.1:3917", "http://127.0.0.1:5917",
                                                           "http://127.0.0.1:8517")
    assert urls.previous == {"dagster": ["http://127.0.0.1:3000"], "mlflow": ["http://127.0.0.1:5000"],
                             "dashboard": ["http://127.0.0.1:8501"]}
    again = ui_urls.save("http://127.0.0.1:3918", "http://127.0.0.1:5917", "http://127.0.0.1:8517")
    assert again.previous["dagster"] == ["http://127.0.0.1:3917", "http://127.0.0.1:3000"]
    assert again.moved()["mlflow"] == ["http://127.0.0.1:5000"]  # old links of every UI stay redirectable
    assert json.loads((Path(home) / "ui.json").read_text())["dagster"] == "http://127.0.0.1:3918"
    assert ui_urls.dagster_run("r1") == "http://127.0.0.1:3918/runs/r1"
    assert ui_urls.dashboard_page("bottlenecks?run=ab") == "http://127.0.0.1:8517/bottlenecks?run=ab"
    monkeypatch.setenv(ui_urls.ENV, "dagster=https://dagster.example.com,mlflow=https://mlflow.example.com")
    told = ui_urls.ui_urls()
    assert (told.dagster, told.mlflow, told.dashboard) == ("https://dagster.example.com",
                                                           "https://mlflow.example.com", "http://127.0.0.1:8517")


@pytest.mark.parametrize("value, message", [
    ("dagster=127.0.0.1:3000", "dagster: '127.0.0.1:3000' is not an http(s) address"),
    ("grafana=http://x", "'grafana=http://x' is not one of dagster=URL"),
])
def test_a_bad_setting_names_the_variable_and_the_value(home: str, monkeypatch, value: str, message: str) -> None:
    monkeypatch.setenv(ui_urls.ENV, value)
    with pytest.raises(ui_urls.UiUrlsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ui_urls.ui_urls()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _location(url: str) -> tuple[int, str]:
    class NoFollow(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
            return None

    try:
        urllib.request.build_opener(NoFollow).open(url, timeout=5)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Location"]
    raise AssertionError(f"{url} did not redirect")


def test_links_made_under_an_earlier_address_are_redirected_to_the_current_one(home: str, monkeypatch) -> None:
    monkeypatch.setattr(ui_urls, "DEFAULTS", {k: f"http://127.0.0.1:{_free_port()}" for k in ui_urls.KINDS})  # no
    # well-known port is touched: the first save remembers the defaults, which links made before any setting use
    old_dagster, old_mlflow, taken = _free_port(), _free_port(), socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ui_urls.save(f"http://127.0.0.1:{old_dagster}", f"http://127.0.0.1:{old_mlflow}",
                 f"http://127.0.0.1:{taken.getsockname()[1]}")
    urls = ui_urls.save("http://127.0.0.1:3917", "http://127.0.0.1:5917", "http://127.0.0.1:8517")
    redirects, notes = start_redirects(urls)
    try:
        assert {(r.kind, r.old) for r in redirects} >= {("dagster", f"http://127.0.0.1:{old_dagster}"),
                                                        ("dagster", ui_urls.DEFAULTS["dagster"])}
        assert _location(f"http://127.0.0.1:{old_dagster}/runs/abc?x=1") == (307, "http://127.0.0.1:3917/runs/abc?x=1")
        assert _location(f"http://127.0.0.1:{old_mlflow}/") == (307, "http://127.0.0.1:5917/")  # the #/… is kept
        assert any(f":{taken.getsockname()[1]} cannot be redirected: its port is in use" in n for n in notes)
    finally:
        for r in redirects:
            r.stop()
        taken.close()
