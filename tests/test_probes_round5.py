"""Round 5 of hostile inputs (issue 44): every probe of tests/probes_round5_cases.py through the command line.

Each must exit 2 with exactly one line on stderr (``error: ...``, no
traceback, no raw control or bidi character), print nothing on stdout, name
what the user typed, leave nothing in its fresh ``--output`` and leave every
input byte for byte as it was (each file's SHA-256 before and after; the
user's own ``--output`` folders are inputs too). The probes marked with an
issue item failed before round 5: a traceback, exit 0, a file replaced, or
a name the user never typed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
from cli_helpers import run_cli
from probes_round5_cases import CASES
from probes_round5_files import write_files

from privaudit._core.messages import has_control_characters

pytest.importorskip("sklearn")
pytest.importorskip("pandas")

#: items of issue 44 this round answers with probes; each must have at least one
ITEMS = (4, 5, 8, 9, 11, 14, 15, 17, 18, 19)
_NO_OUTPUT = ("history",)


def test_the_round_holds_at_least_150_distinct_probes():
    assert len(CASES) >= 150, len(CASES)
    assert len({case.name for case in CASES}) == len(CASES)
    assert len({case.words for case in CASES}) == len(CASES)  # no copy of another probe under a new name
    commands = {" ".join(case.words[:2]) if case.words[0] in ("audit", "canaries") else case.words[0] for case in CASES}
    assert len(commands) >= 15, sorted(commands)


@pytest.mark.parametrize("item", ITEMS)
def test_each_item_has_probes_that_failed_before_the_round(item):
    assert sum(case.item == item for case in CASES) >= 1


def _digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every regular file under ``folder`` (never opening a FIFO), and the target of every symlink."""
    found = {}
    for root, directories, files in os.walk(folder):
        for name in files + directories:
            path = Path(root) / name
            relative = str(path.relative_to(folder))
            if relative.startswith("out-"):
                continue
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                found[relative] = "-> " + os.readlink(path)
            elif stat.S_ISREG(mode):
                found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[relative] = stat.filemode(mode)
    return found


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("probes5")
    write_files(root)
    return root


def _command_line(case, folder: Path, output: Path) -> list[str]:
    words = [str(folder / word[2:]) if word.startswith("f:") else str(output) if word == "OUT" else word for word in case.words]
    if "--output" not in words and words[0] not in _NO_OUTPUT:
        words += ["--output", str(output)]
    if words[0] == "audit" and "--history" not in words:
        words.append("--no-history")
    return words


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hostile_input_exits_2_with_one_line_and_changes_nothing(folder, monkeypatch, case):
    if "nested.parquet" in " ".join(case.words) and not (folder / "nested.parquet").exists():
        pytest.skip("pyarrow is not installed")
    monkeypatch.chdir(folder)
    monkeypatch.delenv("PRIVAUDIT_HISTORY", raising=False)
    output = folder / f"out-{case.name}"
    words = _command_line(case, folder, output)
    before = _digests(folder)
    code, stdout, stderr = run_cli(words)
    lines = stderr.strip().splitlines()
    assert code == 2 and stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), (code, stdout[-500:], stderr[-2000:])
    line = lines[0]
    assert case.match in line, line
    assert not has_control_characters(line), ascii(line)  # escapes and bidi overrides from a header or a flag are shown escaped
    for word in case.absent:
        assert word not in line, line
    assert not output.exists() or not any(output.iterdir()), f"partial output in {output}: {sorted(p.name for p in output.iterdir())}"
    assert _digests(folder) == before  # every input, and the user's own --output folders, byte for byte
