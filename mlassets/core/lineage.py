"""Where a model came from: code commit (and whether the tree was dirty), lock file, environment."""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import platform
import re
import subprocess
from pathlib import Path

from mlassets.core.config.families import DEFAULT, FAMILIES

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOCK_FILE = PROJECT_ROOT / "requirements.lock"
GIT_SHA_ENV = "MLASSETS_GIT_SHA"  # an image built from a commit, without its .git (infra/Dockerfile sets it)


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


@functools.cache
def git_sha() -> str:
    """The commit of the running code: the checkout's, else ``$MLASSETS_GIT_SHA`` (an image), else ``unknown``."""
    return _git("rev-parse", "HEAD") or os.environ.get(GIT_SHA_ENV, "").strip() or "unknown"


def git_dirty() -> bool:
    """True when tracked source files differ from the commit (a rebuild could not be exact); outside a checkout,
    clean only for an image that says which commit it was built from."""
    status = _git("status", "--porcelain", "--untracked-files=no", "--", "mlassets", "pyproject.toml")
    return bool(status) if status is not None else not os.environ.get(GIT_SHA_ENV, "").strip()


@functools.cache
def lock_hash() -> str:
    return hashlib.sha256(LOCK_FILE.read_bytes()).hexdigest() if LOCK_FILE.is_file() else "missing"


@functools.cache
def cpu_model() -> str:
    """The CPU's model name: MKL takes other code paths on non-Intel CPUs of the same capability."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


@functools.cache
def blas() -> str:
    """torch's BLAS build, e.g. ``mkl 2024.2``: another build (or version) rounds differently."""
    import torch

    config = torch.__config__.show()
    name = re.search(r"BLAS_INFO=(\w+)", config)
    version = re.search(r"Math Kernel Library Version ([\w.]+)", config)
    text = name.group(1) if name else "unknown"
    return f"{text} {version.group(1)}" if version and text == "mkl" else text


@functools.cache
def cuda_available() -> bool:
    """Whether this machine has an NVIDIA GPU (asked through NVML, so without importing torch)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount() > 0
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no driver, no library, no device: all mean no GPU here
        return False


def tree_device(family: str) -> str:
    """Where a boosted-trees family trains: ``cuda`` for XGBoost built with CUDA on a machine with a GPU, else
    ``cpu`` (LightGBM's pip build is CPU-only)."""
    facts = FAMILIES.get(family)
    if facts is None or not facts.cuda or not cuda_available():
        return "cpu"
    library = importlib.import_module(facts.library)
    return "cuda" if library.build_info().get("USE_CUDA") else "cpu"


def environment(family: str = DEFAULT) -> dict[str, str]:
    """The facts that change a model's weights even with the same code, data and seed: for the torch families torch's
    version, CPU capability and BLAS; for the boosted trees their library's version and device (no torch)."""
    facts = FAMILIES.get(family)
    if facts is not None and facts.trees:
        library = importlib.import_module(facts.library)
        device = tree_device(family)
        return {"torch_version": "", "cpu_capability": "", "cpu_model": cpu_model(), "blas": "",
                "library": f"{facts.library} {library.__version__}" + (f" {device}" if device != "cpu" else "")}
    import torch

    return {
        "torch_version": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_model": cpu_model(),
        "blas": blas(),
    }
