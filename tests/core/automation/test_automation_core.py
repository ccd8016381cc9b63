"""What the sensors decide, without Dagster: new commits after a cursor, deliveries in a landing folder, the
retrain policy, and the alert a failed run sends (a line always, a webhook when configured)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from mlassets.core.automation.alerts import Alert, post, record
from mlassets.core.automation.commits import new_commits
from mlassets.core.automation.landing import fingerprint, scan
from mlassets.core.automation.policy import scheduled_retrain
from mlassets.core.config import AutomationConfig
from mlassets.core.data.store.local import LocalStore


def test_new_commits_after_the_cursor_oldest_first(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    assert new_commits(store, "sales", "main", None).commits == []  # no repository yet: nothing, no error
    store.create_repo("sales", default_branch="main")
    first = store.commit("sales", "main", {"raw/a": b"1"}, "one").id
    found = new_commits(store, "sales", "main", None)
    assert [c.id for c in found.commits] == [first] and found.head == first and found.cursor_found
    second = store.commit("sales", "main", {"raw/b": b"2"}, "two").id
    third = store.commit("sales", "main", {"raw/c": b"3"}, "three").id
    found = new_commits(store, "sales", "main", first)
    assert [c.id for c in found.commits] == [second, third] and found.head == third  # together, in order
    assert new_commits(store, "sales", "main", third).commits == []  # nothing new: nothing twice
    lost = new_commits(store, "sales", "main", "f" * 64)  # a cursor not in the history: every commit, said so
    assert not lost.cursor_found and [c.id for c in lost.commits] == [first, second, third]


def test_landing_lists_deliveries_by_key_with_a_fingerprint_of_their_content(tmp_path: Path) -> None:
    (tmp_path / "2024-02.csv").write_text("a\n1\n")
    (tmp_path / "2024-01.parquet").write_bytes(b"PAR1")
    (tmp_path / "2024-03").mkdir()
    (tmp_path / "2024-03" / "part-1.csv").write_text("a\n2\n")
    (tmp_path / "2024-04.csv.part").write_text("copying")  # in progress: not yet a delivery
    (tmp_path / ".hidden.csv").write_text("x")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "March.csv").write_text("x")
    found, ignored = scan(tmp_path, "YYYY-MM")
    assert [d.key for d in found] == ["2024-01", "2024-02", "2024-03"]
    assert {i.name for i in ignored} == {"notes.txt", "March.csv"}
    march = next(i for i in ignored if i.name == "March.csv")
    assert "does not match dataset.partitions.pattern 'YYYY-MM'" in march.reason
    before = {d.key: fingerprint(d.path) for d in found}
    stamps = {d.key: d.stamp for d in found}
    (tmp_path / "2024-02.csv").write_text("a\n1\n")  # the same bytes again: the same fingerprint
    (tmp_path / "2024-03" / "part-2.csv").write_text("a\n3\n")  # a folder that grew: a new one
    again = scan(tmp_path, "YYYY-MM")[0]
    after = {d.key: fingerprint(d.path) for d in again}
    assert after["2024-02"] == before["2024-02"] and after["2024-03"] != before["2024-03"]
    assert {d.key: d.stamp for d in again}["2024-03"] != stamps["2024-03"]  # its stamp tells it changed
    assert scan(tmp_path / "missing", "YYYY-MM") == ([], [])


@pytest.mark.parametrize(("retrain", "every", "previous", "champion", "expected"), [
    ("full", 4, 0, True, "full"),
    ("warm_start", 3, 0, True, "warm_start"),
    ("warm_start", 3, 1, True, "warm_start"),
    ("warm_start", 3, 2, True, "full"),  # the third scheduled retrain is a full one
    ("warm_start", 3, 5, True, "full"),
    ("warm_start", 3, 0, False, "full"),  # no champion to start from
])
def test_scheduled_retrain_policy(retrain, every, previous, champion, expected) -> None:
    auto = AutomationConfig(retrain=retrain, full_retrain_every=every)
    assert scheduled_retrain(auto, previous, champion) == expected


class _Hook(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        _Hook.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_an_alert_is_a_line_always_and_a_webhook_post_when_configured(tmp_path: Path) -> None:
    alert = Alert(job="sales_pipeline", run_id="abcdef1234", partition="c0ffee", step="check sales/registered_model"
                  ":gate_passed", reason="slice city=paris: MAE 9.1 vs champion 7.0 (+30%, limit +10%)",
                  owners=["ana@example.com"], tags={"mlassets/trigger": "new_data"})
    record(alert, tmp_path / "alerts.jsonl")
    line = json.loads((tmp_path / "alerts.jsonl").read_text())
    assert line["text"] == ("run abcdef12 of sales_pipeline partition c0ffee (started by new_data) failed at check "
                            "sales/registered_model:gate_passed: slice city=paris: MAE 9.1 vs champion 7.0 (+30%, "
                            "limit +10%) -> ana@example.com")
    assert post(alert, url="") == ""  # no webhook: the line is all
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/hook?token=secret"
        assert post(alert, url=url) == ""
        assert _Hook.received[-1]["owners"] == ["ana@example.com"] and "gate_passed" in _Hook.received[-1]["text"]
    finally:
        server.shutdown()
    problem = post(alert, url=url, timeout_s=1)  # the server is gone
    assert problem.startswith("webhook not reachable") and "secret" not in problem
    assert "not an http(s) URL" in post(alert, url="file:///etc/passwd")
