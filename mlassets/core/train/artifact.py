"""The model artifact: network weights plus the fitted preprocessing, so it scores raw rows of any version.

Layout: ``weights.pt`` (a tensor-only state_dict), ``bundle.json`` (everything else, plain JSON) and
``MANIFEST.json`` (sha256 and size per file, checked before anything is loaded).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from opentelemetry import trace

from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.model import TabularMLP

FORMAT_VERSION = 1
WEIGHTS = "weights.pt"
BUNDLE = "bundle.json"
MANIFEST = "MANIFEST.json"
_TRACER = trace.get_tracer("mlassets.serving")  # the OpenTelemetry API: a no-op until an SDK is installed


@dataclass
class ModelBundle:
    """A trained network with its preprocessing.

    Regression: the network predicts ``(y - target_center) / target_scale``, and predictions are clipped to the
    model's ``output_min``/``output_max`` when the config bounds the target; binary: the logit of P(y = 1), and
    ``predict`` returns the probability.
    """

    model: TabularMLP
    preprocessor: Preprocessor
    model_config: dict[str, Any]
    target: str
    target_center: float = 0.0
    target_scale: float = 1.0
    meta: dict[str, str] = field(default_factory=dict)
    task: str = "regression"

    def predict(self, df: pd.DataFrame, batch_size: int = 65536) -> np.ndarray:
        """Predictions in target units, or P(target = 1) for a binary task (float64), for raw feature rows."""
        with _TRACER.start_as_current_span("preprocessing", attributes={"rows": len(df)}):
            x_cat, x_num = self.preprocessor.transform(df)
        self.model.eval()
        out = np.empty(len(df), dtype=np.float64)
        with torch.no_grad(), _TRACER.start_as_current_span("model", attributes={"rows": len(df)}):
            for start in range(0, len(df), batch_size):
                stop = start + batch_size
                out[start:stop] = self.model(x_cat[start:stop], x_num[start:stop]).double().numpy()
        if self.task == "binary":
            return 0.5 * (1.0 + np.tanh(0.5 * out))  # the logistic function, without overflow
        low, high = self.model_config.get("output_min"), self.model_config.get("output_max")
        out = out * self.target_scale + self.target_center
        return out if low is None and high is None else np.clip(out, low, high)


def build_model(model_config: dict[str, Any], cardinalities: list[int], n_numeric: int) -> TabularMLP:
    """The network described by a ``ModelConfig`` dict (``registered_name`` is ignored)."""
    return TabularMLP(
        cardinalities,
        n_numeric,
        embedding_dim=int(model_config.get("embedding_dim", 8)),
        hidden=[int(h) for h in model_config.get("hidden", [64, 32])],
        dropout=float(model_config.get("dropout", 0.0)),
    )


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
        state = {k: v.detach().cpu().contiguous() for k, v in bundle.model.state_dict().items()}
        torch.save(state, tmp / WEIGHTS)
        doc = {
            "format_version": FORMAT_VERSION,
            "preprocessor": bundle.preprocessor.to_dict(),
            "model_config": bundle.model_config,
            "cardinalities": bundle.preprocessor.cardinalities,
            "n_numeric": len(bundle.preprocessor.numeric),
            "target": bundle.target,
            "target_center": float(bundle.target_center),
            "target_scale": float(bundle.target_scale),
            "task": bundle.task,
            "meta": {str(k): str(v) for k, v in bundle.meta.items()},
        }
        (tmp / BUNDLE).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        files = {name: {"sha256": _sha256(tmp / name), "size": (tmp / name).stat().st_size}
                 for name in (WEIGHTS, BUNDLE)}
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


def verify_manifest(directory: str | Path) -> dict[str, Any]:
    """Check every file listed in ``MANIFEST.json``; a missing or changed file raises ``ValueError``."""
    directory = Path(directory)
    path = directory / MANIFEST
    if not path.is_file():
        raise ValueError(f"{MANIFEST} is missing in {directory}")
    try:
        manifest = json.loads(path.read_text())
        files = manifest["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{MANIFEST} in {directory} is unreadable: {exc!r}") from exc
    for required in (WEIGHTS, BUNDLE):
        if required not in files:
            raise ValueError(f"{MANIFEST} in {directory} does not list {required}")
    for name, entry in files.items():
        file = directory / name
        if Path(name).name != name or not file.is_file():
            raise ValueError(f"{name} is missing in {directory} (listed in {MANIFEST})")
        if file.stat().st_size != entry.get("size") or _sha256(file) != entry.get("sha256"):
            raise ValueError(f"{name} in {directory} does not match its {MANIFEST} checksum")
    return manifest


def load_bundle(directory: str | Path) -> ModelBundle:
    """Verify the manifest, then load the bundle; weights are loaded with ``weights_only=True``."""
    directory = Path(directory)
    verify_manifest(directory)
    try:
        doc = json.loads((directory / BUNDLE).read_text())
        version = doc["format_version"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{BUNDLE} in {directory} is unreadable: {exc!r}") from exc
    if version != FORMAT_VERSION:
        raise ValueError(f"{BUNDLE} in {directory}: format_version {version!r}, expected {FORMAT_VERSION}")
    pre = Preprocessor.from_dict(doc["preprocessor"])
    if doc["cardinalities"] != pre.cardinalities or doc["n_numeric"] != len(pre.numeric):
        raise ValueError(f"{BUNDLE} in {directory}: cardinalities/n_numeric disagree with the preprocessor")
    model = build_model(doc["model_config"], doc["cardinalities"], doc["n_numeric"])
    try:
        state = torch.load(directory / WEIGHTS, weights_only=True, map_location="cpu")
    except (pickle.UnpicklingError, RuntimeError, EOFError) as exc:
        raise ValueError(f"{WEIGHTS} in {directory}: refused to load (tensors only): {exc}") from exc
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"{WEIGHTS} in {directory}: expected a state_dict of tensors")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise ValueError(f"{WEIGHTS} in {directory} does not fit the model: {exc}") from exc
    model.eval()
    return ModelBundle(
        model=model,
        preprocessor=pre,
        model_config=dict(doc["model_config"]),
        target=str(doc["target"]),
        target_center=float(doc["target_center"]),
        target_scale=float(doc["target_scale"]),
        meta={str(k): str(v) for k, v in doc.get("meta", {}).items()},
        task=_task(doc.get("task", "regression"), directory),  # bundles before binary tasks have no "task"
    )


def _task(task: Any, directory: Path) -> str:
    if task not in ("regression", "binary"):
        raise ValueError(f"{BUNDLE} in {directory}: task {task!r}, expected 'regression' or 'binary'")
    return str(task)


def weights_sha256(directory: str | Path) -> str:
    """sha256 of a saved bundle's ``weights.pt``: what a registry record's ``weights_sha256`` must equal."""
    return _sha256(Path(directory) / WEIGHTS)


def check_weights(directory: str | Path, expected: str, what: str) -> None:
    """``ValueError`` unless the bundle's weights are the ones ``what`` recorded (a manifest can be rewritten
    together with the file it vouches for; a record kept elsewhere cannot be, by the same hand)."""
    actual = weights_sha256(directory)
    if actual != expected:
        raise ValueError(f"{WEIGHTS} in {directory} has sha256 {actual[:16]}..., but {what} records "
                         f"{expected[:16]}...: not the weights that were trained and gated; refusing to load them")


def bundle_size_bytes(directory: str | Path) -> int:
    """Total size of the files in a saved bundle."""
    return sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())
