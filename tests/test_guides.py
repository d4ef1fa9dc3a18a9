"""Every guide's worked example runs: the ```python blocks of docs/guide-*.md, executed in order in a scratch folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
GUIDES = sorted(DOCS.glob("guide-*.md"))
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_there_is_a_guide_per_audit_family():
    assert {path.stem for path in GUIDES} >= {"guide-secret-sharer", "guide-dpsgd", "guide-fl", "guide-panoramia", "guide-own-model"}


@pytest.mark.parametrize("guide", GUIDES, ids=[path.stem for path in GUIDES])
def test_worked_example_runs(guide, tmp_path, monkeypatch):
    text = guide.read_text(encoding="utf-8")
    for heading in ("## When to use it", "## Threat model", "## Reading the numbers", "## Worked example"):
        assert heading in text, f"{guide.name} lacks {heading!r}"
    blocks = _BLOCK.findall(text)
    assert blocks, f"{guide.name} has no python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"guide_{guide.stem}"}
    for block in blocks:
        exec(compile(block, str(guide), "exec"), namespace)  # noqa: S102 - the guide's own example
