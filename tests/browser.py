"""Headless Chromium for the report tests: find it, render a page, and read what the browser logged and built."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CONSOLE = re.compile(r":CONSOLE[:(]")  # how Chromium logs a page's console message on stderr


def chromium() -> str | None:
    return next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)


# CI installs Debian's chromium (.ci/run), so there the browser tests must run; elsewhere they skip without a browser
needs_chromium = pytest.mark.skipif(chromium() is None and not os.environ.get("CI"), reason="no chromium binary on PATH (Debian: apt-get install chromium)")


def _run(browser: str, page: Path, *mode: str) -> subprocess.CompletedProcess:
    arguments = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", *mode, page.resolve().as_uri()]
    completed = subprocess.run(arguments, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed


def render(browser: str, page: Path, screenshot: Path) -> str:
    """Render ``page`` headless into ``screenshot``; return the browser's stderr (where console messages are logged)."""
    return _run(browser, page, f"--screenshot={screenshot}", "--window-size=1200,2400").stderr


def rendered_dom(browser: str, page: Path) -> tuple[str, str]:
    """(the DOM Chromium built from ``page``, its stderr)."""
    completed = _run(browser, page, "--dump-dom")
    return completed.stdout, completed.stderr
