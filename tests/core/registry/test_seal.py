"""Every file of a registered version's model folder is sealed in the registration history: each one edited in place
(the folder's own MANIFEST.json rewritten to match) is refused by every door, naming the file, before anything from
the folder runs; the untouched version still loads and predicts the same."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import mlflow
import numpy as np
import pytest
import torch
import yaml

from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.registry import promote, seal
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promotion import PromotionError
from mlassets.core.registry.rebuild import rebuild
from mlassets.core.registry.warm import verified_bundle
from mlassets.core.train import mlflow_model
from mlassets.core.train.artifact import MANIFEST, ModelBundle, save_bundle, weights_sha256
from mlassets.core.train.family import family_of
from mlassets.core.train.plugin_code import CODE_FILE
from mlassets.core.train.synthetic import flights_like
from mlassets.examples.torch_plugin import MODEL
from mlassets.serve import ServingError, load_champion, load_version
from mlassets.serve.build import build
from tests.core.registry import test_promotion as shared
from tests.core.registry.test_promotion import Registry, record

pytestmark = pytest.mark.e2e
reg = shared.reg
ROWS = flights_like(40, 3)


def _register_plugin_model(reg: Registry, tmp_path: Path, plugin_sha: str | None = None) -> tuple[str, Path]:
    """A torch plug-in model logged with its signature and input example, registered; (version, model folder)."""
    source = tmp_path / "src" / "model.py"
    source.parent.mkdir(exist_ok=True)
    source.write_text(MODEL)
    pre = Preprocessor.fit(ROWS, ["carrier", "origin"], ["distance"])
    config = {"family": "torch", "plugin": f"{source}:build", "params": {"width": 8, "depth": 1}}
    torch.manual_seed(0)
    bundle = ModelBundle(None, pre, config, "arr_delay", 5.0, 30.0, family="torch")
    bundle.model = family_of("torch").build(bundle.spec, config)
    path = save_bundle(bundle, tmp_path / "bundle")
    with mlflow.start_run():
        uri = mlflow_model.log_model(path, ROWS)
    sha = hashlib.sha256(MODEL.encode()).hexdigest() if plugin_sha is None else plugin_sha
    rec = dataclasses.replace(record(True, weights_sha256(path)), family="torch", plugin=f"{source}:build",
                              plugin_sha256=sha)
    version = registry.register(reg.name, uri, rec)
    return str(version.version), seal.model_folder(version)


def _rewrite_manifest(bundle_dir: Path) -> None:
    """What a hand with write access does after editing a bundle file: the folder's own manifest made to match."""
    manifest = json.loads((bundle_dir / MANIFEST).read_text())
    for name in manifest["files"]:
        data = (bundle_dir / name).read_bytes()
        manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (bundle_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _edit(path: Path, marker: Path) -> None:
    """A plausible edit of ``path`` that keeps its format (the plug-in's source: one that would leave a marker)."""
    if path.name == "weights.pt":
        state = torch.load(path, weights_only=True)
        torch.save({k: v + 1 for k, v in state.items()}, path)
    elif path.name == CODE_FILE:
        path.write_text(f"from pathlib import Path\nPath({str(marker)!r}).touch()\n" + MODEL)
    elif path.name == "bundle.json":
        doc = json.loads(path.read_text())
        doc["target_center"] += 500.0
        if "plugin_code" in doc:  # its recorded sha kept consistent too
            doc["plugin_code"]["sha256"] = hashlib.sha256((path.parent / CODE_FILE).read_bytes()).hexdigest()
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    elif path.suffix == ".json" and path.name != MANIFEST:
        path.write_text(json.dumps({"edited": json.loads(path.read_text())}))
    else:  # MLmodel, requirements, environment files: one more line, still well formed
        path.write_text(path.read_text() + "\n# edited\n" if path.name != MANIFEST else path.read_text() + " ")
    if path.parent.name.startswith("bundle") and path.name != MANIFEST:
        _rewrite_manifest(path.parent)


def _refused_everywhere(reg: Registry, version: str, relative: str) -> None:
    named = rf"version {version}: its model folder .* does not match the seal .*{relative} differs from the file"
    with pytest.raises(ServingError, match=named):
        load_version(reg.name, version)  # mlassets serve, the endpoint's swap and the online test's candidate
    with pytest.raises(Exception, match=named):
        mlflow.pyfunc.load_model(f"models:/{reg.name}/{version}")
    with pytest.raises(registry.RegistryError, match=named):
        verified_bundle(reg.name, version)  # a warm start from it
    with pytest.raises(registry.RegistryError, match=named):
        rebuild(reg.name, version)
    with pytest.raises(PromotionError, match=named):
        promote.promote(reg.name, version)
    with pytest.raises(PromotionError, match=named):
        promote.rollback(reg.name)  # back to this version


def test_each_file_of_a_registered_folder_edited_is_refused_by_every_door_naming_it(reg: Registry,
                                                                                    tmp_path: Path) -> None:
    version, root = _register_plugin_model(reg, tmp_path)
    other = reg.add(True)[0]
    spec = yaml.safe_load((root / "MLmodel").read_text())["flavors"]["python_function"]
    assert spec["loader_module"] == "mlassets.core.registry.pyfunc_loader"  # the loader is installed code
    assert sorted(p.name for p in root.rglob("*.py")) == [CODE_FILE]  # no wrapper code in the folder
    before = load_version(reg.name, version).predict(ROWS)
    before_pyfunc = np.asarray(mlflow.pyfunc.load_model(f"models:/{reg.name}/{version}").predict(ROWS))
    promote.promote(reg.name, version)
    promote.promote(reg.name, other)  # a rollback goes back to `version`
    files = sorted(seal.files_of(root))
    expected = {"MLmodel", "requirements.txt", "conda.yaml", "python_env.yaml", "input_example.json",
                "serving_input_example.json", f"data/bundle/{CODE_FILE}", "data/bundle/bundle.json",
                "data/bundle/weights.pt", f"data/bundle/{MANIFEST}"}
    assert expected <= set(files), files
    saved = tmp_path / "saved"
    shutil.copytree(root, saved)
    marker = tmp_path / "plugin-ran"
    for relative in files:
        _edit(root / relative, marker)
        try:
            _refused_everywhere(reg, version, relative)
        finally:
            shutil.rmtree(root)
            shutil.copytree(saved, root)
    assert not marker.exists()  # the edited plug-in source was never run
    assert registry.alias_version(reg.name).version == int(other)  # no refused door moved anything
    np.testing.assert_array_equal(load_version(reg.name, version).predict(ROWS), before)
    np.testing.assert_array_equal(
        np.asarray(mlflow.pyfunc.load_model(f"models:/{reg.name}/{version}").predict(ROWS)), before_pyfunc)
    promote.rollback(reg.name)  # the untouched folder moves again
    assert registry.alias_version(reg.name).version == int(version)


def test_the_endpoint_refuses_an_edited_champion_and_serves_it_untouched(reg: Registry, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    version, root = _register_plugin_model(reg, tmp_path)
    promote.promote(reg.name, version)
    saved = tmp_path / "saved"
    shutil.copytree(root, saved)
    _edit(root / "data" / "bundle" / "bundle.json", tmp_path / "marker")  # target centre +500, manifest to match
    named = r"does not match the seal .*data/bundle/bundle.json differs from the file registered"
    with pytest.raises(ServingError, match=named):
        build(reg.name, poll=False)  # what `mlassets serve` builds
    with pytest.raises(ServingError, match=named):
        load_champion(reg.name)
    with pytest.raises(Exception, match=named):
        mlflow.pyfunc.load_model(f"models:/{reg.name}@champion")
    shutil.rmtree(root)
    shutil.copytree(saved, root)
    with TestClient(build(reg.name, poll=False)) as client:
        rows = ROWS[["carrier", "origin", "distance"]].head(3)
        answer = client.post("/predict", json={"rows": rows.to_dict(orient="records")})
    assert answer.status_code == 200, answer.text
    expected = load_champion(reg.name).predict(rows)
    np.testing.assert_allclose([p for p in answer.json()["predictions"]], expected)


def test_a_plugin_source_that_is_not_the_records_code_is_never_imported(reg: Registry, tmp_path: Path) -> None:
    version, root = _register_plugin_model(reg, tmp_path, plugin_sha="0" * 64)  # sealed, but not the record's code
    named = rf"version {version}: the plug-in source {CODE_FILE} has sha256 .* but its registry record names"
    with pytest.raises(ServingError, match=named):
        load_version(reg.name, version)
    with pytest.raises(Exception, match=named):
        mlflow.pyfunc.load_model(f"models:/{reg.name}/{version}")


def test_a_version_registered_before_folders_were_sealed_is_refused(reg: Registry) -> None:
    from mlassets.core.registry import registrations
    from mlassets.core.registry.client import mlflow_client as _client

    version = _client().create_registered_model(reg.name) and _client().create_model_version(
        reg.name, reg.uri, tags=record(True, shared._SHARED["weights"]).to_tags(),
        model_id=reg.uri.removeprefix("models:/"))
    log = registrations.RegistrationLog()  # its row as an older mlassets wrote it: the binding, no seal
    row = log.append_next(reg.name, {"action": registrations.REGISTER, "to_version": str(version.version),
                                     "reason": json.dumps(registrations.binding(version), sort_keys=True,
                                                          separators=(",", ":"))})
    _client().set_registered_model_tag(reg.name, registrations.ANCHOR_TAG, f"{row.seq}:{row.hash}")
    registrations.check(version)  # the history holds it ...
    with pytest.raises(ServingError, match=f"version {version.version} has no seal of its model folder"):
        load_version(reg.name, version.version)  # ... but no door loads it
    with pytest.raises(PromotionError, match="has no seal of its model folder"):
        promote.promote(reg.name, version.version)
    sealed = reg.add(True)[0]  # the same folder registered now carries its seal
    assert load_version(reg.name, sealed).version == str(sealed)
