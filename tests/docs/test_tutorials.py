"""Every command of the tutorials runs against a fresh home, and what the page shows it printing is checked
(``tests/docs/console.py`` says how a page's console blocks are read and matched)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.docs.console import blocks, check, commands, missing

TUTORIALS = Path(__file__).resolve().parents[2] / "docs" / "tutorials"
PAGES = sorted(p.name for p in TUTORIALS.glob("*.md") if p.name != "index.md")
RUNNABLE = {"console"}  # a tutorial's commands are in console blocks; the other languages are files or output
OTHER = {"yaml", "python", "text", "json", "mermaid"}


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def test_every_tutorial_block_is_run_or_is_not_a_command() -> None:
    for page in PAGES:
        for lang, line, body in blocks((TUTORIALS / page).read_text()):
            assert lang in RUNNABLE | OTHER, f"{page}:{line}: a ```{lang} block: use console for commands"
            if lang not in RUNNABLE:
                assert not any(b.startswith("$ ") for b in body), f"{page}:{line}: commands outside a console block"
        assert commands((TUTORIALS / page).read_text()), f"{page} has no command to run"


def test_the_matcher_checks_what_matters() -> None:
    shown = ["month    data version      candidate MAE  gate  champion", "2024-01  2024-01.455b59e9  10.07  pass  v1"]
    folded = "month  data version  candidate MAE  gate  champion\n2024-01  2024-01.cb364b8d  9.97  pass  v1"
    assert missing(shown, folded) == []
    assert missing(shown, "noise\n" + shown[0] + "\n2024-01  2024-01.cb364b8d  9.97  pass  v1") == []
    assert missing(shown, shown[0] + "\n2024-01  2024-01.cb364b8d  9.97  reject  v1") == shown[1:]
    assert missing(shown, shown[1] + "\n" + shown[0]) == shown[1:]  # in order
    assert missing(["rebuild of m version 3: identical predictions"], "rebuild of m version 2: identical predictions")


def _run(page: str, tmp_path: Path) -> None:
    check(TUTORIALS / page, tmp_path, replace={"8931": _free_port()})


# One class per page: `pytest -n 2 --dist loadscope` keeps a class on one worker, so the pages spread over the
# workers instead of queueing behind each other in one module's scope.
E2E = [pytest.mark.e2e, pytest.mark.timeout(1200)]  # the longest page took 383 s on 2 busy cores; a command has 600 s


class TestOwnData:
    pytestmark = E2E

    def test_page(self, tmp_path: Path) -> None:
        _run("own-data.md", tmp_path)


class TestOwnModelTorch:
    pytestmark = E2E

    def test_page(self, tmp_path: Path) -> None:
        _run("own-model-torch.md", tmp_path)


class TestOwnModelLightgbm:
    pytestmark = E2E

    def test_page(self, tmp_path: Path) -> None:
        _run("own-model-lightgbm.md", tmp_path)


class TestServing:
    pytestmark = E2E

    def test_page(self, tmp_path: Path) -> None:
        _run("serving.md", tmp_path)


class TestSharingGpus:
    pytestmark = E2E

    def test_page(self, tmp_path: Path) -> None:
        _run("sharing-gpus.md", tmp_path)


def test_every_tutorial_page_has_its_class() -> None:
    classes = [c for name, c in globals().items() if name.startswith("Test") and isinstance(c, type)]
    named = {c.__name__.removeprefix("Test").lower() for c in classes}
    assert {p.removesuffix(".md").replace("-", "") for p in PAGES} == named
