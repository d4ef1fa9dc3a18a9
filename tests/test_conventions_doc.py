"""docs/conventions.md: every convention names a test, and every test it names exists.

A row whose test is renamed or deleted would leave a convention unproven
while the page still claims it is; this test makes that a failure.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "conventions.md"
REFERENCE = re.compile(r"`?(tests/[\w/]+\.py)::([\w:]+)`?")
DECIDED = {"checked", "explicit", "default"}


def _rows() -> list[list[str]]:
    rows = []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]  # "\|" is a pipe inside a cell
        if not line.lstrip().startswith("|"):
            continue
        assert len(cells) == 4, f"docs/conventions.md: a row must have 4 cells, got {len(cells)}: {line}"
        if not set(cells[0]) <= {"-", " ", ":"} and cells[0].lower() != "convention":
            rows.append(cells)
    return rows


def _defined(path: Path) -> set[str]:
    """Qualified names of the test functions in ``path``: ``test_x`` and ``TestClass::test_x``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.update(f"{node.name}::{item.name}" for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return names


def test_every_row_says_how_it_is_decided_and_names_a_test():
    rows = _rows()
    assert len(rows) >= 10, f"docs/conventions.md lists {len(rows)} conventions"
    for convention, _where, decided, proof in rows:
        assert any(word in decided.lower() for word in DECIDED), f"{convention!r}: 'how decided' must say checked, explicit or default, got {decided!r}"
        assert REFERENCE.search(proof), f"{convention!r} names no test (tests/file.py::test_name), got {proof!r}"


@pytest.mark.parametrize("reference", sorted({match.groups() for row in _rows() for match in REFERENCE.finditer(row[3])}), ids=lambda ref: "::".join(ref))
def test_named_test_exists(reference):
    path, name = reference
    assert (ROOT / path).is_file(), f"docs/conventions.md names {path}, which does not exist"
    assert name in _defined(ROOT / path), f"docs/conventions.md names {path}::{name}, which is not defined there"
