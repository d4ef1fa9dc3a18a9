"""The command line: tables, JSON equal to the library's answer, and bad input → exit 2, one stderr line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import privaudit
from privaudit.cli import app, main
from privaudit.demo_quick import run_quick_demo as run_demo


def _runner():
    try:  # click < 8.2 mixes stderr into stdout unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def run(argv, capsys=None):
    """(exit code, stdout, stderr) through typer's CliRunner, which keeps the two streams apart."""
    result = _runner().invoke(app, argv)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback would be a bug: surface it
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def score_files(tmp_path):
    rng = np.random.default_rng(0)
    in_path, out_path = tmp_path / "in.npy", tmp_path / "out.csv"
    in_scores, out_scores = rng.normal(1.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000)
    np.save(in_path, in_scores)
    out_path.write_text("score\n" + "\n".join(repr(float(v)) for v in out_scores) + "\n")
    return in_path, out_path, in_scores, out_scores


def test_bound_json_equals_the_library(score_files, capsys):
    in_path, out_path, in_scores, out_scores = score_files
    code, out, err = run(["bound", "--in", str(in_path), "--out", str(out_path), "--delta", "1e-5", "--seed", "3", "--json"], capsys)
    assert code == 0 and err == ""
    data = json.loads(out)
    expected = privaudit.epsilon_lower_bound(in_scores, out_scores, delta=1e-5, seed=3)
    assert data["epsilon"] == pytest.approx(expected.epsilon, rel=1e-12)
    assert data["threshold"] == pytest.approx(expected.threshold)
    assert data["valid"] is True and data["method"] == "gdp"


def test_bound_table_and_invalid_warning(score_files, capsys):
    in_path, out_path, in_scores, out_scores = score_files
    code, out, err = run(["bound", "--in", str(in_path), "--out", str(out_path), "--delta", "1e-5", "--threshold", "best"], capsys)
    expected = privaudit.epsilon_lower_bound(in_scores, out_scores, delta=1e-5, threshold="best")
    assert code == 0 and "epsilon" in out and f"{expected.epsilon:.6g}" in out
    assert err.count("\n") == 1 and "valid = False" in err


def test_bound_with_a_fixed_threshold_and_bayes(score_files, capsys):
    in_path, out_path, in_scores, out_scores = score_files
    argv = ["bound", "--in", str(in_path), "--out", str(out_path), "--delta", "1e-5", "--threshold", "0.5", "--interval", "bayes", "--json"]
    code, out, _ = run(argv, capsys)
    expected = privaudit.epsilon_lower_bound(in_scores, out_scores, delta=1e-5, threshold=0.5, interval="bayes")
    assert code == 0 and json.loads(out)["epsilon"] == pytest.approx(expected.epsilon, rel=1e-12)


def test_bound_with_a_pld_family(score_files, capsys):
    in_path, out_path, in_scores, out_scores = score_files
    argv = [
        "bound",
        "--in",
        str(in_path),
        "--out",
        str(out_path),
        "--delta",
        "1e-5",
        "--threshold",
        "0.5",
        "--method",
        "pld",
        "--sampling-prob",
        "0.5",
        "--steps",
        "4",
        "--json",
    ]
    code, out, _ = run(argv, capsys)
    expected = privaudit.epsilon_lower_bound(in_scores, out_scores, delta=1e-5, threshold=0.5, method=privaudit.SubsampledGaussian(0.5, 4))
    data = json.loads(out)
    assert code == 0 and data["method"] == "pld" and data["epsilon"] == pytest.approx(expected.epsilon, rel=1e-12)
    code, _, err = run(argv[:-5] + ["--method", "pld", "--sampling-prob", "0", "--json"], capsys)
    assert code == 2 and "`--sampling-prob` must be in (0, 1]" in err


def test_exposure_table_and_json(tmp_path, capsys):
    canaries, references = tmp_path / "c.txt", tmp_path / "r.txt"
    canaries.write_text("# canary losses\n0.5\n2.0\n")
    references.write_text("\n".join(str(v) for v in [1.0, 2.0, 3.0, 4.0]))
    code, out, _ = run(["exposure", "--canaries", str(canaries), "--references", str(references), "--json"], capsys)
    assert code == 0
    assert json.loads(out)["exposure"]["ranks"] == [1, 3]
    code, out, _ = run(["exposure", "--canaries", str(canaries), "--references", str(references), "--extrapolate"], capsys)
    assert code == 0 and "extrapolated" in out and "Kolmogorov" in out


def test_demo_json_and_table(capsys):
    code, out, _ = run(["demo", "--quick", "--json", "--seed", "1"], capsys)
    assert code == 0
    data = json.loads(out)
    report = run_demo(seed=1)
    assert data == json.loads(json.dumps(report.to_dict()))
    code, table, _ = run(["demo", "--quick", "--seed", "1"], capsys)
    assert code == 0
    for section, _quantity, value in report.rows():
        assert section in table and value in table
    gaussian = data["sections"]["gaussian"]
    assert 0 < gaussian["epsilon lower bound (GDP, Clopper-Pearson)"] <= gaussian["true epsilon"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bound", "--in", "missing.npy", "--out", "missing.npy", "--delta", "0.1"], "`--in`: cannot read 'missing.npy': file not found"),
        (["bound", "--in", "{nan}", "--out", "{good}", "--delta", "1e-5"], "`--in` must contain only finite numbers"),
        (["bound", "--in", "{good}", "--out", "{good}", "--delta", "1.5"], "`--delta` must be in (0, 1), got 1.5"),
        (["bound", "--in", "{good}", "--out", "{good}", "--delta", "1e-5", "--method", "gpd"], "`--method` must be one of"),
        (["bound", "--in", "{good}", "--out", "{good}", "--delta", "1e-5", "--confidence", "0"], "`--confidence` must be in (0, 1)"),
        (["bound", "--in", "{good}", "--out", "{good}", "--delta", "1e-5", "--threshold", "mid"], "`--threshold` must be"),
        (["bound", "--in", "{text}", "--out", "{good}", "--delta", "1e-5"], "expected a number"),
        (["bound", "--in", "{good}"], "`--in` and `--out` must both be given"),
        (["exposure", "--canaries", "{empty}", "--references", "{good}"], "`--canaries` must hold at least 1"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_output(tmp_path, capsys, argv, message):
    files = {"good": tmp_path / "good.txt", "nan": tmp_path / "nan.txt", "text": tmp_path / "text.txt", "empty": tmp_path / "empty.txt"}
    files["good"].write_text("1\n2\n3\n4\n5\n6\n")
    files["nan"].write_text("1\nnan\n3\n")
    files["text"].write_text("1\nabc\n")
    files["empty"].write_text("# nothing\n")
    argv = [arg.format(**{k: str(v) for k, v in files.items()}) for arg in argv]
    code, out, err = run(argv, capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert message in err


def test_python_dash_m_and_console_script_are_equivalent():
    module = subprocess.run([sys.executable, "-m", "privaudit", "--help"], capture_output=True, text=True, check=True)
    for command in ("exposure", "bound", "demo"):
        assert command in module.stdout
    script = Path(sys.executable).with_name("privaudit")
    if script.exists():
        console = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True)
        assert console.stdout.strip() == privaudit.__version__
    for command in ("exposure", "bound", "demo"):
        help_text = subprocess.run([sys.executable, "-m", "privaudit", command, "--help"], capture_output=True, text=True, check=True)
        assert help_text.returncode == 0 and "Usage" in help_text.stdout
    failed = subprocess.run(
        [sys.executable, "-m", "privaudit", "bound", "--in", "nope", "--out", "nope", "--delta", "0.1"], capture_output=True, text=True, check=False
    )
    assert failed.returncode == 2 and failed.stdout == "" and "Traceback" not in failed.stderr


def test_main_is_the_same_entry_point(capsys):
    # the console script calls main(); it must exit like the CliRunner runs above
    with pytest.raises(SystemExit) as exit_info:
        main(["bound", "--in", "missing.npy", "--out", "missing.npy", "--delta", "0.1"])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    assert captured.err == "error: `--in`: cannot read 'missing.npy': file not found\n"
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out == privaudit.__version__ + "\n"


def test_import_privaudit_does_not_import_the_cli():
    code = "import sys, privaudit; privaudit.roc_auc([1.0], [0.0]); print('privaudit.cli' in sys.modules, 'typer' in sys.modules)"
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert probe.stdout.split() == ["False", "False"]
