"""``mlassets ui --port P --mlflow-port Q`` binds only what it is asked: the earlier addresses links may point at
are named, and answered with redirects only with ``--redirect-old-links``; at start it says what it starts and how
long the last start took."""

from __future__ import annotations

import socket

import pytest

from mlassets.cli import ui
from mlassets.cli.ui_notes import last_ready, note_ready, old_links_note, plan_text
from mlassets.core import ui_urls


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def olds(home: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The defaults moved to free ports (no well-known port is touched): what links recorded by a demo point at."""
    defaults = {k: f"http://127.0.0.1:{_free_port()}" for k in ui_urls.KINDS}
    monkeypatch.setattr(ui_urls, "DEFAULTS", defaults)
    return defaults


def _planned() -> list[ui.Server]:
    return [ui.Server(name, [], f"http://127.0.0.1:{_free_port()}", "/") for name in ("Dagster UI", "MLflow UI")]


def test_without_the_flag_no_earlier_address_is_bound(olds: dict[str, str], capsys) -> None:
    assert ui._remember(_planned()) == []
    for old in olds.values():
        assert ui.port_free("127.0.0.1", int(old.rsplit(":", 1)[1]))  # nobody answers there
    out = capsys.readouterr().out
    assert f"{olds['dagster']} (dagster)" in out and f"{olds['mlflow']} (mlflow)" in out
    assert "--redirect-old-links" in out


def test_with_the_flag_the_earlier_addresses_redirect(olds: dict[str, str]) -> None:
    redirects = ui._remember(_planned(), redirect_old=True)
    try:
        assert {(r.kind, r.old) for r in redirects} == {("dagster", olds["dagster"]), ("mlflow", olds["mlflow"])}
        assert not ui.port_free("127.0.0.1", int(olds["dagster"].rsplit(":", 1)[1]))
    finally:
        for r in redirects:
            r.stop()


def test_nothing_to_say_when_links_were_made_here(home: str) -> None:
    assert old_links_note(ui_urls.ui_urls()) == ""  # a new home: no earlier address
    urls = ui_urls.save("https://dagster.example.com", "https://mlflow.example.com", "https://dash.example.com")
    assert "127.0.0.1:3000" in old_links_note(urls)  # the defaults, which links made before may point at
    again = ui_urls.save("https://dagster.example.com", "https://mlflow.example.com", "https://dash.example.com")
    assert "example.com" not in old_links_note(again)  # only loopback addresses: nothing to bind elsewhere


def test_a_dashboard_port_asked_for_and_taken_is_refused(home: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(ui.PortTaken, match=f"--dashboard-port {port}"):
            ui.servers("127.0.0.1", _free_port(), _free_port(), dashboard_port=port)
    assert [s.name for s in ui.servers("127.0.0.1", _free_port(), 0, dashboard_port=0)] == ["Dagster UI"]


def test_the_start_line_names_what_starts_and_the_last_start_time(home: str) -> None:
    planned = [("Dagster UI", "http://127.0.0.1:23000"), ("MLflow UI", "http://127.0.0.1:25000")]
    first = plan_text(planned, last_ready(), 300)
    assert "Dagster UI on http://127.0.0.1:23000, MLflow UI on http://127.0.0.1:25000" in first
    assert "code server" in first and "Dagster daemon" in first and "a first start takes longest" in first
    note_ready({"Dagster UI": 21.4, "MLflow UI": 7.9})
    assert "the last start was ready in: Dagster UI 21 s, MLflow UI 8 s" in plan_text(planned, last_ready(), 300)
