"""`mlassets fleet`: submit admits or refuses (exit 1, the numbers, nothing queued), the status lists the queue,
and the Kubernetes and Dagster renderings come out as YAML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mlassets.cli import main
from mlassets.examples.fleet import write_fleet_example


def test_submit_status_and_renderings(home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    write_fleet_example(tmp_path / "jobs")
    monkeypatch.setenv("MLASSETS_FLEET", str(tmp_path / "jobs" / "fleet.yaml"))
    urgent = str(tmp_path / "jobs" / "urgent" / "job.json")
    assert main(["fleet", "submit", "--job", urgent, "--name", "too-dear", "--ranks", "2", "--capacity", "on-demand",
                 "--expected-minutes", "600", "--checkpoint-every-minutes", "10"]) == 1
    assert "refused: the job costs ₹5,000 (2 GPUs x 10 h x ₹250 per GPU-hour" in capsys.readouterr().err
    assert main(["fleet", "submit", "--job", str(tmp_path / "jobs" / "batch" / "job.json")]) == 0
    assert "queued: 2 GPUs (2 ranks x 1), team research, batch, spot" in capsys.readouterr().out
    assert main(["fleet", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert [(q["position"], q["name"]) for q in view["queue"]] == [(1, "batch")]
    assert [j["state"] for j in view["jobs"]] == ["refused", "queued"]
    assert [j["origin"] for j in view["jobs"]] == ["fleet serve", "fleet serve"]
    assert not (Path(home) / "dagster").exists()  # no Dagster instance in the home: none is created to be read
    assert main(["fleet", "submit", "--job", urgent, "--gpus-per-rank", "0"]) == 2
    assert "fleet.gpus_per_rank: must be >= 1, got 0" in capsys.readouterr().err
    assert main(["fleet", "kueue", "--config", "flights", "--team", "product", "--ranks", "2"]) == 0
    kinds = [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out)]
    assert kinds[-1] == "PyTorchJob" and kinds.count("ClusterQueue") == 3
    assert main(["fleet", "kueue", "--config", "flights", "--team", "nobody"]) == 2
    assert "fleet.team: 'nobody' is not a team of the fleet" in capsys.readouterr().err
    assert main(["fleet", "dagster-yaml"]) == 0
    limits = yaml.safe_load(capsys.readouterr().out)["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {d["value"]: d["limit"] for d in limits} == {"research": 4, "product": 2, "default": 1}
