"""Reliability: malformed input to every command exits 2 with one "error: ..." line naming what is wrong, and leaves no output.

Each case builds its input files in a fresh folder, runs the command with
``--output`` (where it has one) pointing into that folder, and checks:
exit code 2, nothing on stdout, exactly one stderr line starting with
"error: " and containing the expected name, and no new file or folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from privaudit.schemas import stamp_results

GOOD_SCORES = "\n".join(str(v) for v in np.linspace(0, 1, 20)) + "\n"


def _write(folder: Path, name: str, content) -> str:
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, np.ndarray):
        np.save(path, content, allow_pickle=content.dtype == object)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def _npy_truncated(folder: Path) -> bytes:
    np.save(folder / "_full.npy", np.arange(100.0))
    data = (folder / "_full.npy").read_bytes()
    (folder / "_full.npy").unlink()
    return data[:60]


def _results(folder: Path, name: str, data) -> str:
    run = folder / name
    run.mkdir()
    _write(run, "results.json", data)
    return str(run)


def _secret_run(folder: Path, model: bytes, provenance: str) -> str:
    run = folder / "ss-run"
    run.mkdir()
    (run / "model.pt").write_bytes(model)
    (run / "provenance.json").write_text(provenance)
    return str(run)


# (id, build(folder) -> argv, expected text in the error line, modules made unimportable)
CASES = [
    # score files: bad files, wrong shapes, NaNs
    (
        "bound-missing-file",
        lambda f: ["bound", "--in", str(f / "nope.npy"), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "`--in`: cannot read",
        (),
    ),
    ("bound-directory", lambda f: ["bound", "--in", str(f), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"], "is a directory", ()),
    (
        "bound-nan",
        lambda f: ["bound", "--in", _write(f, "i.txt", "1\nnan\n2\n"), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "`--in` must contain only finite",
        (),
    ),
    (
        "bound-inf-npy",
        lambda f: ["bound", "--in", _write(f, "i.npy", np.array([1.0, np.inf])), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "`--in` must contain only finite",
        (),
    ),
    (
        "bound-2d-npy",
        lambda f: ["bound", "--in", _write(f, "i.npy", np.ones((3, 3))), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "`--in`",
        (),
    ),
    (
        "bound-complex-npy",
        lambda f: ["bound", "--in", _write(f, "i.npy", np.ones(3, dtype=complex)), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "`--in`",
        (),
    ),
    (
        "bound-pickled-npy",
        lambda f: ["bound", "--in", _write(f, "i.npy", np.array([{"a": 1}, None], dtype=object)), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "`--in`: cannot read",
        (),
    ),
    (
        "bound-truncated-npy",
        lambda f: ["bound", "--in", _write(f, "i.npy", _npy_truncated(f)), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "`--in`: cannot read",
        (),
    ),
    (
        "bound-two-columns",
        lambda f: ["bound", "--in", _write(f, "i.csv", "1,2\n3,4\n"), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "one column or one row",
        (),
    ),
    (
        "bound-binary-text",
        lambda f: ["bound", "--in", _write(f, "i.txt", b"\xff\xfe\x00\x81garbage"), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5"],
        "`--in`: cannot read",
        (),
    ),
    (
        "bound-empty-out",
        lambda f: ["bound", "--in", _write(f, "i.txt", GOOD_SCORES), "--out", _write(f, "o.txt", "# none\n"), "--delta", "1e-5"],
        "`--out` must hold at least 1",
        (),
    ),
    (
        "bound-delta-zero",
        lambda f: ["bound", "--in", _write(f, "i.txt", GOOD_SCORES), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "0"],
        "`--delta` must be in (0, 1)",
        (),
    ),
    (
        "bound-delta-nan",
        lambda f: ["bound", "--in", _write(f, "i.txt", GOOD_SCORES), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "nan"],
        "`--delta`",
        (),
    ),
    (
        "bound-confidence",
        lambda f: ["bound", "--in", _write(f, "i.txt", GOOD_SCORES), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5", "--confidence", "1.5"],
        "`--confidence` must be in (0, 1)",
        (),
    ),
    (
        "bound-interval",
        lambda f: ["bound", "--in", _write(f, "i.txt", GOOD_SCORES), "--out", _write(f, "o.txt", GOOD_SCORES), "--delta", "1e-5", "--interval", "wald"],
        "`--interval` must be one of",
        (),
    ),
    (
        "bound-pld-sampling",
        lambda f: [
            "bound",
            "--in",
            _write(f, "i.txt", GOOD_SCORES),
            "--out",
            _write(f, "o.txt", GOOD_SCORES),
            "--delta",
            "1e-5",
            "--method",
            "pld",
            "--sampling-prob",
            "2",
        ],
        "`--sampling-prob`",
        (),
    ),
    (
        "bound-pld-steps",
        lambda f: [
            "bound",
            "--in",
            _write(f, "i.txt", GOOD_SCORES),
            "--out",
            _write(f, "o.txt", GOOD_SCORES),
            "--delta",
            "1e-5",
            "--method",
            "pld",
            "--steps",
            "0",
        ],
        "`--steps`",
        (),
    ),
    (
        "exposure-text-references",
        lambda f: ["exposure", "--canaries", _write(f, "c.txt", "1\n"), "--references", _write(f, "r.txt", "1\nabc\n")],
        "`--references`",
        (),
    ),
    # extraction from a run: missing, corrupt or foreign files (model files load with weights_only=True)
    ("extract-no-run", lambda f: ["extract", "--run", str(f / "missing"), "--output", str(f / "out")], "`--run`", ()),
    (
        "extract-corrupt-model",
        lambda f: [
            "extract",
            "--run",
            _secret_run(f, b"not a zip file", json.dumps({"template": "pin {digits:2}", "canaries": [], "seed": 0, "num_original_lines": 1})),
            "--output",
            str(f / "out"),
        ],
        "`--run`: ",
        (),
    ),
    ("extract-bad-provenance", lambda f: ["extract", "--run", _secret_run(f, b"x", "{oops"), "--output", str(f / "out")], "provenance.json", ()),
    ("extract-batch-size", lambda f: ["extract", "--run", _secret_run(f, b"x", "{}"), "--batch-size", "0", "--output", str(f / "out")], "`--batch-size`", ()),
    # secret sharer: bad configs and flags
    ("ss-config-missing", lambda f: ["audit", "secret-sharer", "--config", str(f / "none.json"), "--output", str(f / "out")], "`--config`: cannot read", ()),
    (
        "ss-config-invalid-json",
        lambda f: ["audit", "secret-sharer", "--config", _write(f, "c.json", "{epochs: 3"), "--output", str(f / "out")],
        "`--config`: ",
        (),
    ),
    (
        "ss-config-not-object",
        lambda f: ["audit", "secret-sharer", "--config", _write(f, "c.json", [1, 2]), "--output", str(f / "out")],
        "`--config` must hold a JSON object",
        (),
    ),
    ("ss-config-unknown-key", lambda f: ["audit", "secret-sharer", "--config", _write(f, "c.json", {"epoch": 3}), "--output", str(f / "out")], "epoch", ()),
    (
        "ss-config-wrong-type",
        lambda f: ["audit", "secret-sharer", "--config", _write(f, "c.json", {"epochs": "ten"}), "--output", str(f / "out")],
        "`epochs` must be an integer",
        (),
    ),
    ("ss-config-null", lambda f: ["audit", "secret-sharer", "--config", _write(f, "c.json", {"hidden": None}), "--output", str(f / "out")], "`hidden`", ()),
    ("ss-template-no-hole", lambda f: ["audit", "secret-sharer", "--template", "no secret here", "--output", str(f / "out")], "template", ()),
    ("ss-schedule-text", lambda f: ["audit", "secret-sharer", "--schedule", "1,x", "--output", str(f / "out")], "`--schedule`", ()),
    ("ss-schedule-zero", lambda f: ["audit", "secret-sharer", "--schedule", "0,2", "--output", str(f / "out")], "`--schedule`", ()),
    (
        "ss-missing-torch",
        lambda f: ["audit", "secret-sharer", "--output", str(f / "out"), "--max-corpus-chars", "1000"],
        "missing optional dependency `torch`",
        ("torch",),
    ),
    # DP-SGD: bad configs, missing extras
    (
        "dpsgd-type",
        lambda f: ["audit", "dpsgd", "--config", _write(f, "c.json", {"noise_multiplier": "high"}), "--output", str(f / "out")],
        "`noise_multiplier` must be a number",
        (),
    ),
    ("dpsgd-float-steps", lambda f: ["audit", "dpsgd", "--config", _write(f, "c.json", {"num_steps": 2.5}), "--output", str(f / "out")], "`num_steps`", ()),
    (
        "dpsgd-bool-for-number",
        lambda f: ["audit", "dpsgd", "--config", _write(f, "c.json", {"clip_norm": True}), "--output", str(f / "out")],
        "`clip_norm`",
        (),
    ),
    ("dpsgd-bug", lambda f: ["audit", "dpsgd", "--config", _write(f, "c.json", {"bug": "typo"}), "--output", str(f / "out")], "`bug` must be one of", ()),
    ("dpsgd-delta", lambda f: ["audit", "dpsgd", "--config", _write(f, "c.json", {"delta": 1}), "--output", str(f / "out")], "`delta` must be in (0, 1)", ()),
    (
        "dpsgd-missing-torch",
        lambda f: ["audit", "dpsgd", "--config", _write(f, "c.json", {"num_steps": 2}), "--output", str(f / "out")],
        "missing optional dependency `torch`",
        ("torch",),
    ),
    # black-box runner command
    (
        "blackbox-backend",
        lambda f: ["audit", "blackbox", "--config", _write(f, "c.json", {}), "--output", str(f / "out"), "--backend", "spark"],
        "`--backend` must be one of",
        (),
    ),
    ("blackbox-workers", lambda f: ["audit", "blackbox", "--config", _write(f, "c.json", {}), "--output", str(f / "out"), "--workers", "0"], "`--workers`", ()),
    (
        "blackbox-address-local",
        lambda f: ["audit", "blackbox", "--config", _write(f, "c.json", {}), "--output", str(f / "out"), "--address", "auto"],
        "`--address`",
        (),
    ),
    (
        "blackbox-models",
        lambda f: ["audit", "blackbox", "--config", _write(f, "c.json", {"num_models_per_side": 2}), "--output", str(f / "out")],
        "`num_models_per_side`",
        (),
    ),
    (
        "blackbox-dataset",
        lambda f: ["audit", "blackbox", "--config", _write(f, "c.json", {"dataset": "mnist"}), "--output", str(f / "out")],
        "`dataset` must be one of",
        (),
    ),
    (
        "blackbox-output-is-file",
        lambda f: ["audit", "blackbox", "--config", _write(f, "c.json", {}), "--output", _write(f, "taken", "x")],
        "`--output` must be a directory",
        (),
    ),
    (
        "blackbox-missing-ray",
        lambda f: ["audit", "blackbox", "--config", _write(f, "c.json", {}), "--output", str(f / "out"), "--backend", "ray"],
        "ray",
        ("ray",),
    ),
    (
        "blackbox-missing-torch",
        lambda f: ["audit", "blackbox", "--config", _write(f, "c.json", {}), "--output", str(f / "out")],
        "missing optional dependency `torch`",
        ("torch",),
    ),
    # history store
    ("history-missing", lambda f: ["history", "--history", str(f / "none.sqlite")], "`--history`", ()),
    ("history-directory", lambda f: ["history", "--history", str(f)], "`--history`", ()),
    ("history-not-sqlite", lambda f: ["history", "--history", _write(f, "h.sqlite", b"this is not a database" * 10)], "`--history`", ()),
    ("history-tolerance", lambda f: ["history", "--history", _write(f, "h.sqlite", b""), "--tolerance", "-1"], "`--tolerance`", ()),
    (
        "audit-history-bad-path",
        lambda f: ["audit", "dpsgd", "--config", _write(f, "c.json", {"num_steps": 2}), "--output", str(f / "out"), "--history", str(f)],
        "`--history`",
        (),
    ),
    # report from run folders
    ("report-no-results", lambda f: ["report", str(f), "--output", str(f / "report.html")], "has no results.json", ()),
    ("report-invalid-json", lambda f: ["report", _results(f, "run", "{not json"), "--output", str(f / "report.html")], "is not valid JSON", ()),
    (
        "report-old-schema",
        lambda f: [
            "report",
            _results(f, "run", {"schema_version": 99, "audit": "dpsgd", "result_type": "R", "versions": {}}),
            "--output",
            str(f / "report.html"),
        ],
        "schema_version",
        (),
    ),
    ("report-missing-fields", lambda f: ["report", _results(f, "run", {"schema_version": 1}), "--output", str(f / "report.html")], "lacks the field(s)", ()),
    (
        "report-output-directory",
        lambda f: ["report", _results(f, "run", stamp_results({"result_type": "R", "versions": {}}, audit="x")), "--output", str(f)],
        "`--output` must be a file path",
        (),
    ),
    # demo
    ("demo-output-is-file", lambda f: ["demo", "--output", _write(f, "taken", "x")], "`--output` must be a directory", ()),
    ("demo-seed", lambda f: ["demo", "--output", str(f / "out"), "--seed", "-1"], "`--seed`", ()),
    ("demo-missing-extra", lambda f: ["demo", "--output", str(f / "out")], "privaudit[demo]", ("torch",)),
]


def test_the_suite_is_large_enough():
    assert len(CASES) >= 40
    assert len({case[0] for case in CASES}) == len(CASES)


def _tree(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


@pytest.mark.parametrize(("name", "build", "expected", "blocked"), CASES, ids=[case[0] for case in CASES])
def test_malformed_input_exits_2_with_one_line_and_no_output(cli, tmp_path, monkeypatch, name, build, expected, blocked):
    argv = build(tmp_path)
    before = _tree(tmp_path)
    for module in blocked:  # the optional dependency is "not installed": importing it raises ImportError
        monkeypatch.setitem(sys.modules, module, None)
    code, stdout, stderr = cli(argv)
    assert code == 2, stderr
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert expected in lines[0]
    assert _tree(tmp_path) == before  # nothing written, not even an empty folder
