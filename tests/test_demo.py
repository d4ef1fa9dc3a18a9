"""`privaudit demo`: report.html and results.json from the registered audits, headline numbers equal to each audit's own results."""

from __future__ import annotations

import json

import pytest

from privaudit import demo_full
from privaudit.history import HistoryStore
from privaudit.schemas import stamp_results, validate_results


@pytest.fixture()
def small_fl_demo(monkeypatch):
    """The demo with only its FL audit, at a small size (the full demo is timed in benchmarks/demo.py)."""
    pytest.importorskip("privaudit.audits.fl")
    import dataclasses

    def small(config, seed):
        return dataclasses.replace(
            config, participations=(1, 2), num_canaries=50, num_unobserved=50, seed=seed, training=dataclasses.replace(config.training, num_rounds=6)
        )

    monkeypatch.setattr(demo_full, "DEMO_AUDITS", {"fl": demo_full.DemoAudit("fl", (demo_full.DemoRun("fl", small),))})


def test_demo_writes_report_results_and_history(cli, tmp_path, small_fl_demo):
    output, history = tmp_path / "demo", tmp_path / "h.sqlite"
    code, stdout, stderr = cli(["demo", "--output", output, "--history", history, "--seed", "5"])
    assert code == 0, stderr
    assert stdout.rstrip().endswith(f"report: {output / 'report.html'}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo", "h.sqlite"]  # no scratch folder left behind
    summary = json.loads((output / "results.json").read_text())
    fl = json.loads((output / "fl" / "results.json").read_text())
    assert summary["schema_version"] == 1 and summary["audit"] == "demo" and fl["audit"] == "fl"
    assert validate_results(summary, "summary") is summary  # as written: the demo's block of the results schema
    (entry,) = summary["audits"]
    worst = max(fl["runs"], key=lambda r: r["participations"])
    assert entry["value"] == worst["final"]["estimate"]["epsilon"] and entry["kind"] == "estimate"
    assert entry["results"] == fl
    assert summary["child_seeds"]["fl"] == fl["config"]["seed"]
    page = (output / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 4 and f"{entry['value']:.4g}" in page
    (record,) = HistoryStore(history).records()
    assert record.audit == "fl" and record.value == entry["value"]


def test_same_seed_same_numbers(tmp_path, small_fl_demo):
    first = demo_full.run_full_demo(tmp_path / "a", seed=2)
    second = demo_full.run_full_demo(tmp_path / "b", seed=2)
    assert [s.value for s in first.sections] == [s.value for s in second.sections]
    for a, b in zip(first.results[0]["runs"], second.results[0]["runs"], strict=True):
        assert (a["final"], a["all"], a["test_accuracy"]) == (b["final"], b["all"], b["test_accuracy"])  # wall times differ


def test_unknown_audit_is_refused(tmp_path):
    with pytest.raises(ValueError, match="`audits` must be among"):
        demo_full.run_full_demo(tmp_path / "x", audits=["nope"])
    assert not (tmp_path / "x").exists()


def test_summary_is_checked_against_the_schema_entry_by_entry():
    inner = stamp_results({"result_type": "R", "versions": {"privaudit": "0"}}, audit="x")
    entry = {"directory": "x", "audit": "x", "title": "t", "label": "l", "value": 1.0, "kind": "estimate", "confidence": None, "valid": True, "flag": None}
    entry["results"] = inner
    summary = {"result_type": "DemoResults", "versions": {"privaudit": "0"}, "seed": 0, "child_seeds": {"x": 1}, "seconds": 1.0, "audits": [entry]}
    summary = stamp_results(summary, audit="demo")
    assert validate_results(summary) is summary
    with pytest.raises(ValueError, match="at `audits.0.results.audit`"):  # each audit's own results, against the same schema
        validate_results({**summary, "audits": [{**entry, "results": {**inner, "audit": 3}}]})
    with pytest.raises(ValueError, match="at `audits.0.value`"):
        validate_results({**summary, "audits": [{**entry, "value": "high"}]})
    with pytest.raises(ValueError, match="'child_seeds' is a required property"):
        validate_results({key: value for key, value in summary.items() if key != "child_seeds"})


def test_the_demo_records_library_warnings_and_prints_only_privaudits_notes(cli, tmp_path, small_fl_demo, monkeypatch):
    import warnings

    from privaudit._core.capture import VALIDITY_NOTES
    from privaudit.audits.registry import get_audit

    audit = get_audit("fl")
    original = type(audit).run

    def run_that_warns(self, config, **options):  # as Opacus does when its secure RNG is off
        for _ in range(2):
            warnings.warn("Secure RNG turned off. This is perfectly fine for experimentation", UserWarning, stacklevel=1)
        return original(self, config, **options)

    monkeypatch.setattr(type(audit), "run", run_that_warns)
    code, _, stderr = cli(["demo", "--output", tmp_path / "quiet", "--no-history"])
    assert code == 0, stderr
    secure_rng_note = VALIDITY_NOTES[0][1]
    lines = [line for line in stderr.splitlines() if not line.startswith("stage: ")]  # a log's lines for long stages are privaudit's too
    assert lines == [f"note: {secure_rng_note}"]  # privaudit's words, once; not the library's
    (captured,) = json.loads((tmp_path / "quiet" / "fl" / "results.json").read_text())["captured_warnings"]
    assert captured["count"] == 2 and captured["message"].startswith("Secure RNG turned off")
    code, _, stderr = cli(["demo", "--output", tmp_path / "verbose", "--no-history", "--verbose"])
    assert code == 0 and "captured UserWarning from tests/test_demo.py:" in stderr and "(2x): Secure RNG turned off" in stderr
