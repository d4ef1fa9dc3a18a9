"""The one map from optional package to extra names only extras that pyproject.toml defines, and each extra installs its package."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from privaudit._core.extras import EXTRAS, missing_extra_message

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "yaml": "pyyaml",
    "dp_accounting": "dp-accounting",
    "pydp": "python-dp",
    "snsynth": "smartnoise-synth",
}  # import name -> distribution, where they differ


def _project() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()


def _installs(extra: str, extras: dict[str, list[str]], seen: frozenset = frozenset()) -> set[str]:
    """The distributions that ``pip install 'privaudit[extra]'`` pulls in, following privaudit[...] self-references."""
    names: set[str] = set()
    for requirement in extras[extra]:
        nested = re.fullmatch(r"privaudit\[([^\]]+)\].*", requirement.strip())
        if nested:
            for inner in (part.strip() for part in nested.group(1).split(",")):
                if inner not in seen:
                    names |= _installs(inner, extras, seen | {extra})
        else:
            names.add(_name(requirement))
    return names


def test_every_extra_in_the_map_exists_in_pyproject():
    defined = set(_project()["optional-dependencies"])
    missing = sorted({extra for extra in EXTRAS.values() if extra not in defined})
    assert not missing, f"EXTRAS names extras that pyproject.toml does not define: {missing}"


@pytest.mark.parametrize("package", sorted(EXTRAS))
def test_each_extra_installs_its_package(package):
    extras = _project()["optional-dependencies"]
    distribution = DISTRIBUTIONS.get(package, package).lower()
    assert distribution in _installs(EXTRAS[package], extras), f"privaudit[{EXTRAS[package]}] does not install {distribution}"
    assert f"pip install 'privaudit[{EXTRAS[package]}]'" in missing_extra_message(package)


def test_core_dependencies_are_not_optional():
    core = {_name(requirement) for requirement in _project()["dependencies"]}
    optional = {DISTRIBUTIONS.get(package, package).lower() for package in EXTRAS}
    assert not core & optional, f"core dependencies mapped to an extra: {sorted(core & optional)}"


def test_the_dpmm_extra_installs_what_the_report_draws_with():
    assert "matplotlib" in _installs("dpmm", _project()["optional-dependencies"])


def test_an_audit_without_matplotlib_is_refused_before_the_work(tmp_path, monkeypatch, capsys):
    """The report's figures are drawn after the audit: a missing matplotlib is named, with its extra, before any sampling."""
    import importlib.util

    from privaudit.cli import main

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "matplotlib" else found(name, *args))
    with pytest.raises(SystemExit) as code:
        main(["audit", "mechanism", "--epsilon", "1", "--samples", "200", "--pilot-samples", "100", "--output", str(tmp_path / "out"), "--no-history"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code.value.code == 2 and len(lines) == 1 and "pip install 'privaudit[plots]'" in lines[0], lines
    assert not (tmp_path / "out").exists()
