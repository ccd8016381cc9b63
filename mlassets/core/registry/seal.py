"""The seal of a registered version's model folder: one digest over every file a loader reads from it.

When mlassets registers a version it takes the sha256 of every file under the logged model's folder (the family's
model file, ``bundle.json`` with the preprocessing and vocabularies, ``MANIFEST.json``, a plug-in's source, the
``MLmodel`` file with the signature, the requirements and environment files, the input example) and one digest over
that list. Both go into the version's row of the registration history (``registrations.record``), whose hash chain
is anchored in MLflow: the seal never sits in the folder it describes, so a hand that rewrites a file and the
folder's own manifest to match cannot rewrite the seal too. The one file left out is ``registered_model_meta``,
which MLflow itself rewrites in the folder each time it loads a version through the registry.

Every door (``versions.verified_bundle_dir``, the pyfunc loader, promote and rollback) calls ``verify`` before
anything from the folder is unpickled, imported or run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlassets.core.registry.client import RegistryError

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

UNSEALED = frozenset({"registered_model_meta"})  # MLflow writes it into the folder at every registry load


class SealBroken(RegistryError):
    """A file of a registered version's folder is not the file that was registered (changed, missing or extra)."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def files_of(root: str | Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative POSIX path -> digest), links followed, ``UNSEALED`` left out."""
    root = Path(root)
    if not root.is_dir():
        raise SealBroken(f"the model folder {root} is missing")
    return {path.relative_to(root).as_posix(): _sha256(path)
            for path in sorted(root.rglob("*")) if path.is_file() and path.relative_to(root).as_posix() not in UNSEALED}


def digest(files: dict[str, str]) -> str:
    """The one digest over a folder's files: sha256 of their sorted (path, sha256) list."""
    return hashlib.sha256(json.dumps(sorted(files.items()), separators=(",", ":")).encode()).hexdigest()


def seal_of(root: str | Path) -> dict[str, Any]:
    """What a registration row holds of the folder at ``root``: its digest and each file's sha256."""
    files = files_of(root)
    return {"sha256": digest(files), "files": files}


def model_folder(version: ModelVersion) -> Path:
    """The local folder of a version's logged model (the one holding ``MLmodel``; downloaded if remote)."""
    import mlflow

    return Path(mlflow.artifacts.download_artifacts(artifact_uri=version.source))


def check_plugin(version: ModelVersion, bundle_dir: str | Path) -> None:
    """``SealBroken`` unless a bundled plug-in source is the code the version's record names (``plugin_sha256``):
    checked before the source is imported."""
    from mlassets.core.registry.client import record_of
    from mlassets.core.train.artifact import BUNDLE

    try:
        code = json.loads((Path(bundle_dir) / BUNDLE).read_text()).get("plugin_code")
    except (OSError, ValueError) as exc:
        raise SealBroken(f"{BUNDLE} in {bundle_dir} is unreadable: {exc!r}") from None
    if not code:
        return
    path = Path(bundle_dir) / Path(str(code.get("file", ""))).name
    actual = _sha256(path) if path.is_file() else "(missing)"
    want = record_of(version).plugin_sha256
    if actual != want:
        raise SealBroken(f"model {version.name!r} version {version.version}: the plug-in source {path.name} has "
                         f"sha256 {actual[:16]}..., but its registry record names plugin_sha256 {want[:16]}...; "
                         "refusing to import it")
