"""The model artifact: a model of any family plus the fitted preprocessing, so it scores raw rows of any version.

Layout: the family's model file (``weights.pt`` for the torch families: a tensor-only state_dict; ``model.txt``
or ``model.ubj`` for boosted trees: their native formats), ``bundle.json`` (everything else, plain JSON) and
``MANIFEST.json`` (sha256 and size per file, checked before anything is loaded). Nothing is ever unpickled.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from opentelemetry import trace

from mlassets.core.config.families import DEFAULT
from mlassets.core.features.preprocess import Factorized, Preprocessor
from mlassets.core.train import plugin_code
from mlassets.core.train.family import family_of
from mlassets.core.train.feature_spec import FeatureSpec, output_size

FORMAT_VERSION = 2  # 2: any family (1: the MLP only, still read)
WEIGHTS = "weights.pt"  # the torch families' model file (format 1 bundles have no other)
BUNDLE = "bundle.json"
MANIFEST = "MANIFEST.json"
TASKS = ("regression", "binary", "multiclass")
_TRACER = trace.get_tracer("mlassets.serving")  # the OpenTelemetry API: a no-op until an SDK is installed


@dataclass
class ModelBundle:
    """A trained model of one family with its preprocessing.

    ``predict`` gives, per raw row: regression, the value in target units (the model predicts
    ``(y - target_center) / target_scale``), clipped to the model's ``output_min``/``output_max`` when the config
    bounds the target; binary, P(y = 1); multiclass, one probability per class of ``classes`` ([n, k]).
    """

    model: Any  # the family's model object (an nn.Module, a Booster)
    preprocessor: Preprocessor
    model_config: dict[str, Any]
    target: str
    target_center: float = 0.0
    target_scale: float = 1.0
    meta: dict[str, str] = field(default_factory=dict)
    task: str = "regression"
    family: str = DEFAULT
    classes: list[str] = field(default_factory=list)  # multiclass: the class labels, in output order

    @property
    def spec(self) -> FeatureSpec:
        return FeatureSpec(self.preprocessor.cardinalities, len(self.preprocessor.numeric),
                           output_size(self.task, self.classes), self.task, dict(self.model_config.get("params", {})))

    @property
    def features(self) -> list[str]:
        """The raw columns a request must hold."""
        return [*self.preprocessor.categorical, *self.preprocessor.numeric]

    def predict(self, df: pd.DataFrame, batch_size: int = 65536,
                factorized: Mapping[str, Factorized] | None = None) -> np.ndarray:
        """Target units, P(target = 1) or class probabilities (float64), for raw feature rows. ``factorized``: columns
        of ``df`` already factorized (``preprocess.factorize_columns``: one factorization for two models' scores)."""
        with _TRACER.start_as_current_span("preprocessing", attributes={"rows": len(df)}):
            x_cat, x_num = self.preprocessor.transform(df, factorized)
        with _TRACER.start_as_current_span("model", attributes={"rows": len(df)}):
            return self.forward(x_cat, x_num, batch_size)

    def forward(self, x_cat: np.ndarray, x_num: np.ndarray, batch_size: int = 65536) -> np.ndarray:
        """``predict`` after preprocessing: the model on ``preprocessor.transform``'s arrays, post-processed."""
        family = family_of(self.family)
        parts = [family.predict(self.model, x_cat[s:s + batch_size], x_num[s:s + batch_size])
                 for s in range(0, len(x_cat), batch_size)]
        k = output_size(self.task, self.classes)
        out = np.concatenate(parts) if parts else np.empty((0, k) if k > 1 else 0)
        return postprocess(out.astype(np.float64, copy=False), self.task, self.target_center, self.target_scale,
                           self.model_config.get("output_min"), self.model_config.get("output_max"))

    def predict_labels(self, df: pd.DataFrame) -> np.ndarray:
        """Multiclass: the most probable class of each row (its label); other tasks: ``predict``."""
        out = self.predict(df)
        return np.asarray(self.classes, dtype=object)[out.argmax(axis=1)] if self.task == "multiclass" else out


def postprocess(out: np.ndarray, task: str, center: float, scale: float, low: float | None = None,
                high: float | None = None) -> np.ndarray:
    """A family's raw outputs in the task's terms (see ``ModelBundle.predict``)."""
    if task == "binary":
        return 0.5 * (1.0 + np.tanh(0.5 * out))  # the logistic function, without overflow
    if task == "multiclass":
        z = out - out.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)
    out = out * scale + center
    return out if low is None and high is None else np.clip(out, low, high)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def save_bundle(bundle: ModelBundle, directory: str | Path) -> Path:
    """Write the bundle to ``directory`` atomically (built beside it, then swapped in); returns the path."""
    directory = Path(directory).resolve()
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        family = family_of(bundle.family)
        family.save(bundle.model, tmp)
        doc = {
            "format_version": FORMAT_VERSION,
            "family": bundle.family,
            "weights_file": family.weights_file,
            "preprocessor": bundle.preprocessor.to_dict(),
            "model_config": bundle.model_config,
            "cardinalities": bundle.preprocessor.cardinalities,
            "n_numeric": len(bundle.preprocessor.numeric),
            "target": bundle.target,
            "target_center": float(bundle.target_center),
            "target_scale": float(bundle.target_scale),
            "task": bundle.task,
            "classes": list(bundle.classes),
            "meta": {str(k): str(v) for k, v in bundle.meta.items()},
        }
        code = plugin_code.package(bundle.model_config, tmp)  # a file plug-in's source travels with the model
        if code is not None:
            doc["plugin_code"] = code
        (tmp / BUNDLE).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        files = {name: {"sha256": _sha256(tmp / name), "size": (tmp / name).stat().st_size}
                 for name in (family.weights_file, BUNDLE, *([code["file"]] if code else []))}
        manifest = {"format_version": FORMAT_VERSION, "files": files}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        old = None
        if directory.exists():  # os.replace cannot replace a non-empty directory: move it aside first
            old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
            os.replace(directory, old / directory.name)
        os.replace(tmp, directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def verify_manifest(directory: str | Path, required: tuple[str, ...] = (BUNDLE,)) -> dict[str, Any]:
    """Check every file listed in ``MANIFEST.json`` (and that ``required`` ones are listed); a missing or changed
    file raises ``ValueError``."""
    directory = Path(directory)
    path = directory / MANIFEST
    if not path.is_file():
        raise ValueError(f"{MANIFEST} is missing in {directory}")
    try:
        manifest = json.loads(path.read_text())
        files = manifest["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{MANIFEST} in {directory} is unreadable: {exc!r}") from exc
    for name in required:
        if name not in files:
            raise ValueError(f"{MANIFEST} in {directory} does not list {name}")
    for name, entry in files.items():
        file = directory / name
        if Path(name).name != name or not file.is_file():
            raise ValueError(f"{name} is missing in {directory} (listed in {MANIFEST})")
        if file.stat().st_size != entry.get("size") or _sha256(file) != entry.get("sha256"):
            raise ValueError(f"{name} in {directory} does not match its {MANIFEST} checksum")
    return manifest


def _document(directory: Path) -> dict[str, Any]:
    """``bundle.json``, its format checked; a format 1 bundle reads as the MLP it is."""
    try:
        doc = json.loads((directory / BUNDLE).read_text())
        version = doc["format_version"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{BUNDLE} in {directory} is unreadable: {exc!r}") from exc
    if version not in (1, FORMAT_VERSION):
        raise ValueError(f"{BUNDLE} in {directory}: format_version {version!r}, expected {FORMAT_VERSION}")
    doc.setdefault("family", DEFAULT)
    doc.setdefault("task", "regression")  # bundles before binary tasks have no "task"
    doc.setdefault("classes", [])
    try:
        family = family_of(doc["family"])
    except ValueError as exc:
        raise ValueError(f"{BUNDLE} in {directory}: {exc}") from None
    if doc.get("weights_file", family.weights_file) != family.weights_file:
        raise ValueError(f"{BUNDLE} in {directory}: family {doc['family']!r} keeps its model in "
                         f"{family.weights_file}, not {doc['weights_file']!r}")
    if doc["task"] not in TASKS:
        raise ValueError(f"{BUNDLE} in {directory}: task {doc['task']!r}, expected one of {', '.join(TASKS)}")
    doc["weights_file"] = family.weights_file
    return doc


def load_bundle(directory: str | Path) -> ModelBundle:
    """Verify the manifest, then load the bundle through its family (tensors only, or a native model file)."""
    directory = Path(directory)
    verify_manifest(directory)
    doc = _document(directory)
    verify_manifest(directory, (BUNDLE, doc["weights_file"]))
    pre = Preprocessor.from_dict(doc["preprocessor"])
    if doc["cardinalities"] != pre.cardinalities or doc["n_numeric"] != len(pre.numeric):
        raise ValueError(f"{BUNDLE} in {directory}: cardinalities/n_numeric disagree with the preprocessor")
    classes = [str(c) for c in doc["classes"]]
    bundle = ModelBundle(
        model=None, preprocessor=pre, model_config=dict(doc["model_config"]), target=str(doc["target"]),
        target_center=float(doc["target_center"]), target_scale=float(doc["target_scale"]),
        meta={str(k): str(v) for k, v in doc.get("meta", {}).items()}, task=str(doc["task"]),
        family=str(doc["family"]), classes=classes,
    )
    if doc.get("plugin_code"):
        verify_manifest(directory, (BUNDLE, doc["weights_file"], str(doc["plugin_code"]["file"])))
    bundle.model = family_of(bundle.family).load(directory, bundle.spec, plugin_code.resolve(doc, directory))
    return bundle


def weights_file(directory: str | Path) -> Path:
    """The bundle's model file (its family's ``weights_file``)."""
    directory = Path(directory)
    return directory / _document(directory)["weights_file"]


def weights_sha256(directory: str | Path) -> str:
    """sha256 of a saved bundle's model file: what a registry record's ``weights_sha256`` must equal."""
    return _sha256(weights_file(directory))


def check_weights(directory: str | Path, expected: str, what: str) -> None:
    """``ValueError`` unless the bundle's model file is the one ``what`` recorded (a manifest can be rewritten
    together with the file it vouches for; a record kept elsewhere cannot be, by the same hand)."""
    path = weights_file(directory)
    actual = _sha256(path)
    if actual != expected:
        raise ValueError(f"{path.name} in {directory} has sha256 {actual[:16]}..., but {what} records "
                         f"{expected[:16]}...: not the weights that were trained and gated; refusing to load them")


def bundle_size_bytes(directory: str | Path) -> int:
    """Total size of the files in a saved bundle."""
    return sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())
