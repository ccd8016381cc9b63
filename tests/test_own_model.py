"""A model of one's own by a plug-in file and the CLI alone: ``mlassets example torch-plugin`` to a champion, an
identical rebuild from the registry record, and a rebuild refused once the plug-in's source changed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from mlassets.core.registry.promote import live_version
from tests.test_own_data import cli

pytestmark = pytest.mark.e2e
MODEL = "flights_arr_delay_plugin"


def test_a_torch_plugin_reaches_a_champion_rebuilds_identically_and_refuses_changed_code(home: str, tmp_path: Path,
                                                                                       capsys) -> None:
    code, out, _ = cli(capsys, "example", "torch-plugin", str(tmp_path / "mine"))
    assert code == 0 and "model.py" in out
    config = tmp_path / "mine" / "flights_plugin.yaml"
    data = yaml.safe_load(config.read_text())
    data["dataset"]["sample_fraction"] = 0.1  # a tenth of January: seconds, not minutes
    data["gate"].update(latency_p99_ms=10_000.0, slice_min_rows=40)  # this test is about the plug-in, not speed
    config.write_text(yaml.safe_dump(data, sort_keys=False))

    code, _, err = cli(capsys, "ingest", "--config", str(config), "--partition", "2013-01")
    assert code == 0, err
    code, out, err = cli(capsys, "run", "--config", str(config))
    assert code == 0, err + out
    assert live_version(MODEL) == "1", out

    code, out, err = cli(capsys, "rebuild", MODEL, "--version", "1")
    assert code == 0, err + out
    assert "identical predictions" in out and "weights sha256 match" in out

    model_file = tmp_path / "mine" / "model.py"
    recorded = hashlib.sha256(model_file.read_bytes()).hexdigest()
    model_file.write_text(model_file.read_text().replace("nn.GELU()", "nn.ReLU()"))
    code, out, err = cli(capsys, "rebuild", MODEL, "--version", "1")
    assert code == 2, out
    changed = hashlib.sha256(model_file.read_bytes()).hexdigest()
    assert f"sha256 {changed[:16]}" in err and f"names {recorded[:16]}" in err and "refusing" in err
