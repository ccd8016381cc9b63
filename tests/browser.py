"""The browser tests' Chromium: Debian's, found on PATH (Playwright's own download cannot work offline)."""

from __future__ import annotations

import os
import shutil

import pytest


def chromium_or_skip() -> str:
    """The Chromium executable; a failure under CI (``make test`` installs it as root), a skip elsewhere."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        message = "no chromium on PATH and none could be installed (make test installs Debian's chromium as root)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return chromium
