"""A file plug-in's source travels inside the bundle: editing, moving or deleting the original after training
changes nothing served; a packaged copy that is not the recorded code is refused at load."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.artifact import ModelBundle, load_bundle, save_bundle
from mlassets.core.train.family import family_of
from mlassets.core.train.plugin_code import CODE_FILE
from mlassets.core.train.synthetic import flights_like
from mlassets.examples.torch_plugin import MODEL

DOUBLED = MODEL.replace("return out.squeeze(1) if out.shape[1] == 1 else out",
                        "out = 2 * out\n        return out.squeeze(1) if out.shape[1] == 1 else out")


def _bundle(model_file: Path) -> ModelBundle:
    rows = flights_like(200, 0)
    pre = Preprocessor.fit(rows, ["carrier", "origin"], ["distance"])
    config = {"family": "torch", "plugin": f"{model_file}:build", "params": {"width": 8, "depth": 1}}
    torch.manual_seed(0)
    bundle = ModelBundle(None, pre, config, "arr_delay", 5.0, 30.0, family="torch")
    bundle.model = family_of("torch").build(bundle.spec, config)
    return bundle


def test_the_served_code_is_the_packaged_copy_not_the_edited_or_moved_file(tmp_path: Path) -> None:
    assert DOUBLED != MODEL
    model_file = tmp_path / "src" / "model.py"
    model_file.parent.mkdir()
    model_file.write_text(MODEL)
    rows = flights_like(30, 1)
    trained = save_bundle(_bundle(model_file), tmp_path / "bundle")
    before = load_bundle(trained).predict(rows)
    doc = json.loads((trained / "bundle.json").read_text())
    assert doc["plugin_code"]["sha256"] == hashlib.sha256(MODEL.encode()).hexdigest()
    model_file.write_text(DOUBLED)  # forward doubled after training
    np.testing.assert_array_equal(load_bundle(trained).predict(rows), before)
    model_file.unlink()  # moved away
    np.testing.assert_array_equal(load_bundle(trained).predict(rows), before)


def test_a_packaged_copy_that_is_not_the_recorded_code_is_refused(tmp_path: Path) -> None:
    model_file = tmp_path / "model.py"
    model_file.write_text(MODEL)
    trained = save_bundle(_bundle(model_file), tmp_path / "bundle")
    (trained / CODE_FILE).write_text(DOUBLED)
    with pytest.raises(ValueError, match=f"{CODE_FILE} in .* does not match its MANIFEST.json checksum"):
        load_bundle(trained)
    manifest = json.loads((trained / "MANIFEST.json").read_text())  # the manifest rewritten to match: bundle.json
    manifest["files"][CODE_FILE] = {"sha256": hashlib.sha256(DOUBLED.encode()).hexdigest(),
                                    "size": len(DOUBLED.encode())}
    (trained / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"the plug-in source .* has sha256 .* but the bundle records .*refusing"):
        load_bundle(trained)
