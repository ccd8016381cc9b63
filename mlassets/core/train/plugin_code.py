"""A torch plug-in's source travels inside the model bundle (and so inside the MLflow model), hash-checked at load.

Trained from ``path/to/file.py:function``, the bundle keeps a copy of that file (``plugin_code.py``, listed in the
manifest with its sha256) and ``bundle.json`` names it with the source's sha256. Loading builds the module from the
copy, never from the original path: a plug-in edited, moved or deleted after training changes nothing served, and a
copy that is not the recorded code is refused. (An installed ``package.module:function`` plug-in is imported as
installed; ``check_unchanged`` against the registry record guards it.)
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlassets.core.config.model import plugin_kind

CODE_FILE = "plugin_code.py"


def package(model_config: Mapping[str, Any], directory: Path) -> dict[str, str] | None:
    """Copy a file plug-in's source into ``directory``; what ``bundle.json`` records of it (None: nothing to copy)."""
    spec = str(model_config.get("plugin", ""))
    if not spec or plugin_kind(spec) == "module":
        return None
    source, _, function = spec.rpartition(":")
    data = Path(source).read_bytes()
    (directory / CODE_FILE).write_bytes(data)
    shutil.copymode(source, directory / CODE_FILE)
    return {"file": CODE_FILE, "function": function, "sha256": hashlib.sha256(data).hexdigest(), "trained_from": spec}


def resolve(doc: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """The model config to build the model from: a packaged plug-in points at the bundle's copy, its sha256 checked
    (``ValueError`` naming both hashes otherwise)."""
    config = dict(doc["model_config"])
    code = doc.get("plugin_code")
    if not code:
        return config
    path = directory / str(code["file"])
    if Path(str(code["file"])).name != code["file"] or not path.is_file():
        raise ValueError(f"the plug-in source {code['file']!r} is missing in {directory}")
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual != code["sha256"]:
        raise ValueError(f"the plug-in source {path} has sha256 {actual[:16]}..., but the bundle records "
                         f"{str(code['sha256'])[:16]}... (trained from {code['trained_from']}): refusing")
    config["plugin"] = f"{path}:{code['function']}"
    return config
