"""The documentation site builds with ``mkdocs build --strict``, documents every public name, and the README stays a front page.

Strict mode turns every warning into a failure: a broken link between pages,
an API entry that does not resolve, a page missing from the navigation.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    process = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert process.returncode == 0, process.stderr[-3000:]
    return folder


def _anchors(page: Path) -> set[str]:
    return set(re.findall(r'id="([\w.]+)"', page.read_text(encoding="utf-8")))


def test_every_public_name_has_an_api_entry(site):
    import privaudit

    anchors = _anchors(site / "api" / "privaudit" / "index.html")
    missing = [f"{module}.{name}" for name, module in privaudit._EXPORTS.items() if f"{module}.{name}" not in anchors]
    assert not missing, f"no API entry for {missing}"


def test_every_audit_family_its_config_and_result_are_documented(site):
    from privaudit.audits.registry import AUDITS, get_audit

    anchors = _anchors(site / "api" / "audits" / "index.html")
    for name in AUDITS:
        audit = get_audit(name)
        for kind in (audit.config_type, audit.result_type):
            assert f"{kind.__module__}.{kind.__qualname__}" in anchors, f"{name}: {kind.__qualname__} has no API entry"


def test_testing_helpers_are_documented(site):
    import privaudit.testing

    anchors = _anchors(site / "api" / "testing" / "index.html")
    assert {f"privaudit.testing.{name}" for name in privaudit.testing.__all__} <= anchors


def test_the_cli_reference_lists_every_command(site):
    import typer

    from privaudit.cli import app

    text = (site / "cli" / "index.html").read_text(encoding="utf-8")
    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert f"privaudit {name}" in text, f"the CLI reference lacks `privaudit {name}`"
        for sub in getattr(command, "commands", {}):
            assert f"privaudit {name} {sub}" in text, f"the CLI reference lacks `privaudit {name} {sub}`"


def test_every_page_is_in_the_navigation(site):
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python", "python"))

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for value in node.values():
                yield from pages(value)
        elif isinstance(node, list):
            for item in node:
                yield from pages(item)

    listed = set(pages(config["nav"]))
    on_disk = {str(path.relative_to(ROOT / "docs")) for path in (ROOT / "docs").rglob("*.md")}
    assert on_disk <= listed, f"pages outside the navigation: {sorted(on_disk - listed)}"


def test_the_readme_is_a_front_page_with_both_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 12 * 1024
    assert ".venv/bin/privaudit demo" in text and "<!-- test-command -->" in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), f"README links to a missing page {link}"


def test_docstring_examples_render_as_code():
    import doctest
    import importlib.util

    spec = importlib.util.spec_from_file_location("griffe_doctests", ROOT / "tools" / "griffe_doctests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert doctest.testmod(module).failed == 0
    text = module.plain_roles(module.fence_doctests("Use :class:`~a.B`.\n\n>>> f(\n...     1)\n2\n\nEnd."))
    assert text == "Use `a.B`.\n\n```pycon\n>>> f(\n...     1)\n2\n```\n\nEnd."
