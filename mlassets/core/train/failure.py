"""Why a training process failed, in one sentence the orchestrator shows first.

The process (any rank; the first to fail wins) writes ``<out>/failure.json`` before it exits, beside the Pipes
channel that carries its log: the step's failure is then that sentence (``training failed: PluginError: ...``)
instead of ``External execution process failed with code 1`` above a traceback. Bad input (a ``ValueError``:
a plug-in that is missing, raises or returns the wrong shape, a config or data the family refuses) fails the
same way again, so the step is not retried for it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FAILURE = "failure.json"


def sentence(exc: BaseException) -> str:
    """The exception's first line, with its kind: one sentence, never its traceback."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "") or repr(exc)
    return f"training failed: {type(exc).__name__}: {text[:1000]}"


def record_failure(out_dir: str | Path, exc: BaseException) -> None:
    """Write the failure once (a rank that fails because another did does not overwrite the cause)."""
    path = Path(out_dir) / FAILURE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        return  # written by another rank first, or no working area: the log still has it
    with os.fdopen(fd, "w") as fh:
        json.dump({"failure": sentence(exc), "retry": not isinstance(exc, ValueError)}, fh)


def read_failure(out_dir: str | Path) -> tuple[str, bool] | None:
    """``(sentence, whether a retry may help)`` when the process recorded why it failed."""
    path = Path(out_dir) / FAILURE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return str(data["failure"]), bool(data.get("retry", True))
