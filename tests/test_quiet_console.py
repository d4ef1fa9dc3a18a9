"""A quiet console: libraries' warnings during an audit are recorded, not printed; privaudit's notes on validity always are.

The default PANORAMIA audit trains a DP-SGD target through Opacus, which warns
that its secure RNG is off, that the accountant's best order is its largest,
and torch that a full backward hook fired: the same happens here on a tiny
config with one DP target, in a real process (pytest's own warning capture
would hide what a user sees).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from privaudit._core.capture import CapturedWarning, capture_library_output

pytest.importorskip("opacus")


@pytest.fixture(scope="module")
def dp_panoramia(tmp_path_factory):
    from privaudit.audits.config import config_text, with_overrides
    from privaudit.audits.registry import get_audit

    folder = tmp_path_factory.mktemp("quiet")
    audit = get_audit("panoramia")
    config = with_overrides(audit.tiny_config(), {"targets": {"dp": {"epochs": 2, "dp_epsilon": 2.0}}}, "test")
    (folder / "config.json").write_text(config_text(config), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "privaudit",
        "audit",
        "panoramia",
        "--config",
        str(folder / "config.json"),
        "--output",
        str(folder / "out"),
        "--no-history",
    ]
    process = subprocess.run(
        command, capture_output=True, text=True, check=False, env={key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    )
    assert process.returncode == 0, process.stderr
    return process, json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))


def test_no_library_warning_reaches_stderr_only_privaudits_notes(dp_panoramia):
    process, _ = dp_panoramia
    lines = [line for line in process.stderr.splitlines() if line.strip() and not line.startswith("stage: ")]  # a log's lines for long stages
    assert lines, "the secure-RNG note is missing"
    assert all(line.startswith("note: ") for line in lines), process.stderr
    assert any("without a secure random generator" in line for line in lines)


def test_what_was_captured_is_in_results_json_with_its_count_and_note(dp_panoramia):
    _, data = dp_panoramia
    captured = [CapturedWarning(**item) for item in data["captured_warnings"]]
    secure = [item for item in captured if "Secure RNG turned off" in item.message]
    assert len(secure) == 1 and secure[0].count >= 1 and secure[0].note and secure[0].source.startswith("opacus/")
    assert all(not item.source.startswith("/") for item in captured), "paths of the machine leak into results"


def test_verbose_prints_the_libraries_own_words(capsys):
    import warnings

    from privaudit.cli.options import report_captured

    with capture_library_output() as captured:
        for _ in range(3):
            warnings.warn("Full backward hook is firing", UserWarning, stacklevel=1)
    report_captured(captured.items, verbose=False)
    assert capsys.readouterr().err == ""
    report_captured(captured.items, verbose=True)
    err = capsys.readouterr().err
    assert err.startswith("captured UserWarning from tests/test_quiet_console.py:") and err.endswith("(3x): Full backward hook is firing\n")


def test_log_records_of_libraries_with_their_own_handlers_are_captured_and_restored(capsys):
    import logging

    library = logging.getLogger("some_library")
    handler = logging.StreamHandler()
    library.addHandler(handler)
    try:
        with capture_library_output() as captured:
            library.warning("weights not initialised: %s", "lm_head")
            logging.getLogger("privaudit.audits").warning("ours")
        assert [(item.source, item.category, item.message) for item in captured.items] == [("some_library", "WARNING", "weights not initialised: lm_head")]
        assert library.handlers == [handler] and library.propagate
        assert capsys.readouterr().err == ""
    finally:
        library.removeHandler(handler)


def test_the_report_lists_what_was_captured_with_privaudits_note(dp_panoramia, tmp_path):
    from privaudit.report.html import write_report
    from privaudit.report.sections import section_for

    _, data = dp_panoramia
    page = tmp_path / "report.html"
    write_report([section_for(data)], page)
    html = page.read_text(encoding="utf-8")
    warnings_part = html[html.index("<h3>Warnings</h3>") :]
    assert "Secure RNG turned off" in warnings_part and "without a secure random generator" in warnings_part
    assert "opacus/privacy_engine.py" in warnings_part
    quiet = {key: value for key, value in data.items() if key != "captured_warnings"}
    write_report([section_for(quiet)], page)
    assert "None: the libraries the audit called raised no warning." in page.read_text(encoding="utf-8")
