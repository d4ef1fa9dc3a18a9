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


# task pages of the documentation site whose examples run as the guides' do
TASK_PAGES = [DOCS / name for name in ("getting-started.md", "reading-the-numbers.md", "statistics.md", "architecture.md")]


@pytest.mark.parametrize("page", TASK_PAGES, ids=[path.stem for path in TASK_PAGES])
def test_task_page_examples_run(page, tmp_path, monkeypatch):
    blocks = _BLOCK.findall(page.read_text(encoding="utf-8"))
    assert blocks, f"{page.name} has no python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"page_{page.stem}"}
    for block in blocks:
        exec(compile(block, str(page), "exec"), namespace)  # noqa: S102 - the page's own example
