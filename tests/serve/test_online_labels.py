"""Labels that arrive during an online test: the endpoint records each scored row, `mlassets online labels` joins
a real CSV or Parquet file to them on a temp home, and the rule rolls back a canary whose metric is worse."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mlassets.cli import main
from mlassets.core.config import shipped_configs
from mlassets.core.diagnose import spans
from mlassets.core.evaluate.online_labels import LABELLED, LABELS, PREDICTIONS, online_dir
from mlassets.core.metric_defs import get_metric
from mlassets.core.registry import online_log, promote
from mlassets.core.registry import versions as registry
from mlassets.serve.build import build
from mlassets.serve.recorder import Recorder
from mlassets.serve.rows import schema_of, to_frame
from tests.core.registry import test_promotion as shared
from tests.serve.server import flow, running, until
from tests.serve.test_online import FEATURES, ROWS, _actions, _roots, _shifted

reg = shared.reg
Registry = shared.Registry
KEY = ["carrier", "origin", "dest", "dep_hour", "distance"]
SCHEMA = schema_of(shared.FLIGHTS.features.categorical, shared.FLIGHTS.features.numeric, shared.FLIGHTS)


def _config(tmp_path: Path, name: str, **online_keys: object) -> Path:
    """The shipped flights config for model ``name``, with ``serving.online`` keys."""
    data = yaml.safe_load(shipped_configs()["flights"].read_text())
    data["model"]["registered_name"] = name
    data["serving"] = {"online": online_keys}
    path = tmp_path / "flights_labels.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows as the endpoint hands them to a variant (the request's JSON through its checks)."""
    return to_frame(json.loads(rows[FEATURES].to_json(orient="records")), SCHEMA, 1000)


def _labels(capsys: pytest.CaptureFixture, name: str, file: Path, config: str) -> tuple[int, str, str]:
    code = main(["online", "labels", name, str(file), "--config", config])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_labels_join_the_recorded_rows_of_each_variant_and_bad_files_write_nothing(
        reg: Registry, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLASSETS_USER", "labeller")
    reg.add(True, True)
    promote.promote(reg.name, "1")
    online_log.start(reg.name, "2", "canary")
    test = online_log.running(reg.name)
    config = _config(tmp_path, reg.name, label_key=KEY, min_labelled=5)
    rows = shared.flights_rows(40, seed=5)
    assert not rows.duplicated(KEY).any()
    rng = np.random.default_rng(1)
    predicted = rows["arr_delay"].to_numpy() + rng.normal(0, 10, 40)
    recorder = Recorder(online_dir(reg.name, test.seq), KEY)
    recorder.record("champion", "1", "t1", _frame(rows[:30]), predicted[:30])
    recorder.record("canary", "2", "t2", _frame(rows[30:]), predicted[30:])
    first = rows[:35].copy()  # the canary's rows 35.. have no label yet
    first.loc[len(first)] = shared.flights_rows(1, seed=9).iloc[0]  # a flight the test never scored
    csv = tmp_path / "labels.csv"
    first[[*KEY, "arr_delay"]].to_csv(csv, index=False)
    code, out, _ = _labels(capsys, reg.name, csv, config)
    assert code == 0, out
    folder = online_dir(reg.name, test.seq)
    written = json.loads((folder / LABELLED).read_text())
    mae = get_metric("mae")
    champion_mae = float(np.mean(np.abs(predicted[:30] - rows["arr_delay"][:30])))
    canary_mae = float(np.mean(np.abs(predicted[30:35] - rows["arr_delay"][30:35])))
    champion_rows = np.abs(predicted[:30] - rows["arr_delay"][:30])
    assert written["variants"]["champion"] == {"labelled": 30, "value": pytest.approx(champion_mae), "sums":
                                               pytest.approx([30, champion_rows.sum(), (champion_rows**2).sum()])}
    assert written["variants"]["candidate"]["labelled"] == 5
    assert written["variants"]["candidate"]["value"] == pytest.approx(canary_mae)
    assert "paired" not in written  # a canary's rows are its own: judged as two samples
    assert written["who"] == "labeller"  # the principal the command checked (single-user mode: the claimed name)
    assert f"36 labels from labels.csv, 35 on rows the endpoint recorded for v2 (canary against v1, seq {test.seq})" \
        in out
    assert [line.split()[:2] for line in out.splitlines() if line.startswith(("champion", "canary"))] == \
        [["champion", "30"], ["canary", "5"]]
    assert f"{mae.fmt(canary_mae)} on 5 labelled rows vs the champion's {mae.fmt(champion_mae)} on 30" in out

    before = {p: p.read_bytes() for p in (folder / LABELLED, folder / LABELS)}
    bad = {"no_dest.csv": first.drop(columns=["dest"]), "no_target.csv": first[KEY],
           "other.csv": shared.flights_rows(6, seed=11), "labels.txt": first}
    for file_name, frame in bad.items():
        frame.to_csv(tmp_path / file_name, index=False)
    refusals = {"no_dest.csv": "'no_dest.csv' has no column 'dest' (a key column, serving.online.label_key)",
                "no_target.csv": "'no_target.csv' has no column 'arr_delay' (the target)",
                "other.csv": "'other.csv': none of its 6 labelled rows matches a row the endpoint recorded",
                "labels.txt": "'labels.txt': must be .csv or .parquet, got '.txt'"}
    for file_name, message in refusals.items():
        code, _, err = _labels(capsys, reg.name, tmp_path / file_name, config)
        assert code == 2 and message in err, err
    assert {p: p.read_bytes() for p in before} == before  # nothing written

    later = rows[35:].copy()  # the rest, typed as another tool writes them: dep_hour as text, distance as float
    later["dep_hour"], later["distance"] = later["dep_hour"].astype(str), later["distance"].astype(float)
    later[[*KEY, "arr_delay"]].to_parquet(tmp_path / "later.parquet", index=False)
    code, out, _ = _labels(capsys, reg.name, tmp_path / "later.parquet", config)
    assert code == 0 and "41 labels kept for the test" in out
    written = json.loads((folder / LABELLED).read_text())
    assert written["variants"]["candidate"]["labelled"] == 10
    assert written["variants"]["candidate"]["value"] == pytest.approx(
        float(np.mean(np.abs(predicted[30:] - rows["arr_delay"][30:]))))

    code, _, err = _labels(capsys, reg.name, csv, _config(tmp_path, reg.name))
    assert code == 2 and "serving.online.label_key is not set" in err
    online_log.roll_back(reg.name, test, "done")
    code, _, err = _labels(capsys, reg.name, csv, config)
    assert code == 2 and "has no online test running" in err


def test_a_canary_that_labels_show_worse_is_rolled_back_with_the_metric_in_the_reason(
        reg: Registry, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture) -> None:
    uri, weights = _shifted(tmp_path_factory)  # 500 minutes above the champion: far worse on real delays
    reg.add(True)
    bad = str(registry.register(reg.name, uri, shared.record(True, weights)).version)
    promote.promote(reg.name, "1")
    online_log.start(reg.name, bad, "canary")
    test = online_log.running(reg.name)
    config = _config(tmp_path, reg.name, label_key=KEY, share=0.5, min_requests=6, min_labelled=8,
                     require_labels=True, max_latency_ratio=1000.0, max_prediction_shift=1.0e9)
    app = build(reg.name, config, swap_poll_s=0.1)
    rows = shared.flights_rows(4, seed=3)  # ROWS, with their delays
    assert not rows.duplicated(KEY).any()
    rows[[*KEY, "arr_delay"]].to_csv(tmp_path / "delays.csv", index=False)
    seen: list[tuple[int, str]] = []
    stop = threading.Event()
    with running(app) as base:
        (thread,) = flow(base, stop, seen, ROWS, clients=1)
        try:
            until(lambda: app.state.online.running is not None
                  and "labels: no labels yet" in app.state.online.decision().reason, "the rule to wait for labels")
            assert _actions(reg)[-1] == ("canary-start", bad)  # the shift alone would not roll it back
            code, out, err = _labels(capsys, reg.name, tmp_path / "delays.csv", config)
            assert code == 0, err
            until(lambda: _actions(reg)[-1][0] == online_log.ROLLED_BACK, "the rollback")
        finally:
            stop.set()
            thread.join(timeout=60)
    folder = online_dir(reg.name, test.seq)
    written = json.loads((folder / LABELLED).read_text())["variants"]
    mae = get_metric("mae")
    reason = reg.log.entries(reg.name)[-1].reason
    assert "over the limit" in out and reason.startswith("online test failed after ")
    assert (f"MAE {mae.fmt(written['candidate']['value'])} on {written['candidate']['labelled']} labelled rows vs "
            f"the champion's {mae.fmt(written['champion']['value'])} on {written['champion']['labelled']}") in reason
    assert written["candidate"]["value"] > written["champion"]["value"] + 400
    recorded = [json.loads(line) for line in (folder / PREDICTIONS).read_text().splitlines()]
    assert {(r["variant"], r["version"]) for r in recorded} == {("champion", "1"), ("canary", bad)}
    answered = {s["trace_id"]: s["attributes"]["variant"] for s in _roots(spans.ENDPOINT)}
    assert all(answered[r["trace_id"]] == r["variant"] for r in recorded)  # the request's trace, and who answered
    assert promote.live_version(reg.name) == "1"
