"""Issue 34's acceptance items not held elsewhere, each through the command line.

* a log (stderr not a terminal) gets a line when a long stage starts and one with its elapsed time when it ends,
  and an audit's last line says where its history went;
* Ctrl-C during the demo leaves no staging folder and no partial output (kill -9: tests/test_demo_staging.py);
* ``report RUN --output RUN/results.json`` says it would overwrite the run's results file;
* ``bound --method`` names every method it takes, ``pld`` included.
"""

from __future__ import annotations

import hashlib
import re
import signal
import subprocess
import time

import numpy as np
import pytest
from cli_helpers import run_cli, start_demo


def _one_error_line(code: int, stdout: str, stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert code == 2 and stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), (code, stdout, stderr)
    return lines[0]


@pytest.fixture()
def scores(tmp_path):
    rng = np.random.default_rng(0)
    np.savetxt(tmp_path / "in.txt", rng.normal(1.0, 1.0, 200))
    np.savetxt(tmp_path / "out.txt", rng.normal(0.0, 1.0, 200))
    return ["bound", "--in", tmp_path / "in.txt", "--out", tmp_path / "out.txt"]


# -- messages --------------------------------------------------------------------------------------------
def test_bound_method_lists_every_method_it_takes_pld_included(scores, tmp_path):
    line = _one_error_line(*run_cli([*scores, "--method", "bogus", "--output", tmp_path / "run"]))
    assert line == "error: `--method` must be one of 'gdp', 'eps-delta', 'pure', 'pld', got 'bogus'"
    assert not (tmp_path / "run").exists()
    code, _, stderr = run_cli([*scores, "--method", "pld", "--sampling-prob", "0.5", "--steps", "4", "--output", tmp_path / "pld"])
    assert code == 0 and (tmp_path / "pld" / "results.json").is_file(), stderr  # the listed method is taken


@pytest.mark.parametrize("name", ["results.json", "roc.png"])
def test_a_report_over_a_file_of_its_run_says_it_would_overwrite_that_file(scores, tmp_path, name):
    run = tmp_path / "rY"
    code, _, stderr = run_cli([*scores, "--output", run])
    assert code == 0, stderr
    before = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in run.iterdir()}
    line = _one_error_line(*run_cli(["report", run, "--output", run / name]))
    assert line.startswith(f"error: `--output` would overwrite RUN's {name}: both are ") and "choose another --output" in line
    assert "must not be `RUN`" not in line
    assert {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in run.iterdir()} == before


# -- a log's stage lines -----------------------------------------------------------------------------------
def test_a_captured_audit_prints_when_its_stages_start_and_how_long_they_took(tmp_path, monkeypatch):
    """``audit mia`` run with its output captured (not a terminal) and the stage lines' delay at 0 s: each stage starts and ends in plain lines.

    The same run's last line says where its history went.
    """
    pytest.importorskip("sklearn")
    from privaudit.cli.options import STAGE_DELAY_ENV

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    (tmp_path / "pool.csv").write_text("a,b,c,label\n" + "".join(f"{u:.4f},{v:.4f},{w:.4f},{int(u > 0)}\n" for u, v, w in x))
    monkeypatch.setenv(STAGE_DELAY_ENV, "0")
    store = tmp_path / "moved" / "history.sqlite"
    argv = ["audit", "mia", "--data", tmp_path / "pool.csv", "--label-col", "label", "--references", "4", "--output", tmp_path / "run", "--history", store]
    code, stdout, stderr = run_cli(argv)
    assert code == 0, stderr
    *lines, history = stderr.strip().splitlines()
    assert history == f"history: appended to {store} (--no-history to skip)" and store.is_file()
    started = [match.group(1) for match in map(re.compile(r"^stage: (.+): started 0 s ago$").match, lines) if match]
    done = {match.group(1): float(match.group(2)) for match in map(re.compile(r"^stage: (.+): done in (\d+\.\d) s$").match, lines) if match}
    assert "training models" in started and set(started) == set(done), lines
    assert len(lines) == 2 * len(started), lines  # nothing else: no bar
    for stage in started:  # each stage's end follows its start
        assert lines.index(f"stage: {stage}: started 0 s ago") < next(i for i, line in enumerate(lines) if line.startswith(f"stage: {stage}: done in "))
    assert "\x1b" not in stderr + stdout and "━" not in stderr  # plain text: no progress bar, no terminal codes


# -- Ctrl-C during the demo ----------------------------------------------------------------------------------
def test_ctrl_c_during_the_demo_leaves_no_staging_folder_and_no_output(tmp_path):
    output = tmp_path / "privaudit-demo"
    demo = start_demo(output, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240  # start-up on a loaded machine
        while not list(tmp_path.glob(".privaudit-demo.privaudit-staging-*")) and demo.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(tmp_path.glob(".privaudit-demo.privaudit-staging-*")), "the demo never made its staging folder"
        demo.send_signal(signal.SIGINT)  # mid-run: the first audit is working in the staging folder
        _, stderr = demo.communicate(timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert demo.returncode == 130, (demo.returncode, stderr[-2000:])
    lines = [line for line in stderr.strip().splitlines() if not line.startswith("stage: ")]
    assert lines == [f"interrupted: the demo stopped and wrote nothing to {output}; run it again to start over"], stderr[-2000:]
    assert sorted(path.name for path in tmp_path.iterdir()) == [], "a staging folder or partial output was left"
