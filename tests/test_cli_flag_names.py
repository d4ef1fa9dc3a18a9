"""Messages name the flag the user typed on the commands outside ``privaudit audit``: a library argument's name never reaches the console.

Each case fails with the library's own wording (`template`, `count`, `delta`, ...) and passes only once the command rewrites it.
"""

from __future__ import annotations

import re

import pytest
from cli_helpers import assert_refused


@pytest.fixture
def files(tmp_path):
    (tmp_path / "corpus.txt").write_text("hello world\nfoo bar\n", encoding="utf-8")
    (tmp_path / "corpus.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "scores.txt").write_text("0.1\n0.2\n0.3\n0.4\n0.5\n", encoding="utf-8")
    (tmp_path / "losses.txt").write_text("1.0\n2.0\n", encoding="utf-8")
    return tmp_path


CASES = {
    "insert-template": (["canaries", "insert", "--corpus", "corpus.txt", "--template", "my pin"], "`--template` must contain at least one hole"),
    "insert-hole": (["canaries", "insert", "--corpus", "corpus.txt", "--template", "pin {digits:0}"], "`--template` hole length must be >= 1"),
    "insert-column": (["canaries", "insert", "--corpus", "corpus.csv", "--format", "csv", "--column", "zz"], "`--column` must be one of"),
    # 6 schedule counts x 200000 per count = 1.2e6 canaries > the 10**6 six-digit pins
    "insert-count": (["canaries", "insert", "--corpus", "corpus.txt", "--canaries-per-count", "200000"], "asks for 1200000 distinct canaries"),
    "bound-delta": (["bound", "--in", "scores.txt", "--out", "scores.txt", "--delta", "2"], "`--delta` must be in (0, 1), got 2"),
    "bound-confidence": (["bound", "--in", "scores.txt", "--out", "scores.txt", "--confidence", "1.5"], "`--confidence` must be in (0, 1)"),
    "bound-method": (["bound", "--in", "scores.txt", "--out", "scores.txt", "--method", "zz"], "`--method` must be one of"),
    "bound-interval": (["bound", "--in", "scores.txt", "--out", "scores.txt", "--interval", "zz"], "`--interval` must be one of"),
    "exposure-confidence": (["exposure", "--canaries", "losses.txt", "--references", "scores.txt", "--confidence", "2"], "`--confidence`"),
}


@pytest.mark.parametrize("name", CASES)
def test_the_message_names_the_flag_typed(files, monkeypatch, name):
    argv, match = CASES[name]
    monkeypatch.chdir(files)
    line = assert_refused([*argv, "--output", files / "out"], files / "out", match)
    # no bare library argument name in backticks: every quoted name is a flag
    assert all(word.startswith("--") for word in re.findall(r"`([^`]+)`", line)), line
