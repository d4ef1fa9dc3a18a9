"""Behaviour kept across refactors: every family's tiny run writes the results.json recorded in ``tests/recorded/``.

The recordings were written by this file on the code before a restructuring
(``python tests/test_recorded_outputs.py``, which rewrites them); volatile
fields (times, versions, paths, library warnings) are stripped before the
comparison, numbers compare to 1e-9 relative. ``demo_seed0.json`` holds the
headlines of ``privaudit demo --seed 0`` (a minute of CPU): its test runs only
with ``PRIVAUDIT_CHECK_DEMO=1``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import pytest

from privaudit.audits.registry import get_audit, names
from privaudit.report.runs import write_run

RECORDED = Path(__file__).resolve().parent / "recorded"
# keys whose values change from run to run or machine to machine, at any depth
VOLATILE = {
    "captured_warnings",  # library warnings: their source lines move with any edit
    "models_per_minute",
    "timings_s",
    "wall_time_s",
    "machine",
    "created",
    "created_at",
    "timestamp",
    "time",
    "duration",
    "duration_s",
    "elapsed",
    "elapsed_s",
    "seconds",
    "wall_s",
    "version",
    "versions",
    "privaudit_version",
    "python",
    "platform",
    "host",
    "warnings",
    "path",
    "directory",
    "output",
    "environment",
    "seconds_per_model",
    "runtime",
    "started",
    "finished",
}


def strip(value, key: str = ""):
    """``value`` without its volatile fields and with absolute paths replaced."""
    if isinstance(value, dict):
        return {k: strip(v, k) for k, v in value.items() if k not in VOLATILE and not k.endswith(("_seconds", "_time", "_at", "_path", "_dir"))}
    if isinstance(value, list):
        return [strip(item) for item in value]
    if isinstance(value, str) and (value.startswith("/") or os.sep + "tmp" in value):
        return "<path>"
    return value


def assert_same(actual, expected, where: str = "$") -> None:
    """Equal structure; floats equal to 1e-9 relative (NaN equals NaN)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), (
            f"{where}: keys {sorted(actual) if isinstance(actual, dict) else actual} != {sorted(expected)}"
        )
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: length differs"
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}[{index}]")
    elif isinstance(expected, float) and not isinstance(expected, bool):
        assert isinstance(actual, (int, float)), f"{where}: {actual!r} != {expected!r}"
        assert (math.isnan(actual) and math.isnan(expected)) or actual == pytest.approx(expected, rel=1e-9, abs=1e-12), f"{where}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def tiny_results(name: str, directory: Path) -> dict:
    audit = get_audit(name)
    return strip(write_run(directory, audit.run(audit.tiny_config()), figures=False))


def _available(name: str) -> bool:
    audit = get_audit(name)
    return all(importlib.util.find_spec(package) is not None for package in audit.requires)


RECORDED_FAMILIES = sorted(path.stem for path in RECORDED.glob("*.json") if path.stem != "demo_seed0")


def test_every_recorded_family_is_still_registered():
    assert set(RECORDED_FAMILIES) <= set(names())


@pytest.mark.parametrize("name", RECORDED_FAMILIES)
def test_tiny_run_writes_the_recorded_results(name, tmp_path):
    if not _available(name):
        pytest.skip(f"needs {get_audit(name).requires}")
    expected = json.loads((RECORDED / f"{name}.json").read_text(encoding="utf-8"))
    assert_same(tiny_results(name, tmp_path / name), expected)


def test_the_comparison_can_fail():
    with pytest.raises(AssertionError):
        assert_same({"a": [1.0, 2.0]}, {"a": [1.0, 2.0 + 1e-6]})
    assert strip({"created": 1, "b": {"duration_s": 2, "c": "/tmp/x"}}) == {"b": {"c": "<path>"}}


@pytest.mark.skipif(os.environ.get("PRIVAUDIT_CHECK_DEMO") != "1", reason="the full demo takes a minute of CPU: set PRIVAUDIT_CHECK_DEMO=1")
def test_demo_seed0_headlines_are_the_recorded_ones(cli, tmp_path):
    code, out, err = cli(["demo", "--output", tmp_path / "demo", "--seed", "0", "--no-history", "--json"])
    assert code == 0, err
    assert_same(demo_headlines(json.loads(out)), json.loads((RECORDED / "demo_seed0.json").read_text(encoding="utf-8")))


def demo_headlines(printed) -> dict:
    """The seeds, and each audit's headline and results, of ``privaudit demo --json``'s output, by directory."""
    return strip({"seed": printed["seed"], "child_seeds": printed["child_seeds"], "audits": {entry["directory"]: entry for entry in printed["audits"]}})


if __name__ == "__main__":  # record: python tests/test_recorded_outputs.py [--demo-only] [demo.json]
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for family in [] if "--demo-only" in sys.argv else names():
            if _available(family):
                data = tiny_results(family, Path(folder) / family)
                (RECORDED / f"{family}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
                print("recorded", family)
    if sys.argv[-1].endswith(".json"):
        printed = json.loads(Path(sys.argv[-1]).read_text(encoding="utf-8"))
        (RECORDED / "demo_seed0.json").write_text(json.dumps(demo_headlines(printed), indent=1, sort_keys=True) + "\n", encoding="utf-8")
