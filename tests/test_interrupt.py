"""Ctrl-C on ``audit mia``: the workers stop at once, finished runs stay on disk, one line says how to resume, exit 130.

The CLI runs as a subprocess whose ``--train`` makes one job short and every
other job sleep 20 s. After the short job's run is saved, SIGINT must end the
command within 5 s (it used to wait for every running job and discard the
finished ones); a rerun resumes the saved run and trains only the others.
The waits for the start are generous (a loaded 2-core machine); only the stop
is held to 5 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

TRAIN = """
import os, time
from sklearn.linear_model import LogisticRegression

def train(x_train, y_train, *, seed):
    if len(x_train) > 8:  # a job of the runner, not the probe
        folder = os.environ["SLOW_TRAIN_DIR"]
        open(os.path.join(folder, f"call-{os.getpid()}-{time.monotonic_ns()}"), "w").close()
        if not os.environ.get("SLOW_TRAIN_FAST"):
            try:  # the first job to claim the marker is short; every other one sleeps
                os.close(os.open(os.path.join(folder, "short"), os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                time.sleep(20)
    return LogisticRegression(max_iter=200).fit(x_train, y_train)
"""


def _runs(output: Path) -> list[Path]:
    return sorted(output.glob("runs/**/run-*.json"))


def _calls(folder: Path) -> int:
    return len(list(folder.glob("call-*")))


@pytest.fixture()
def setup(tmp_path):
    (tmp_path / "slow_train.py").write_text(TRAIN)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    lines = ["patient_id,a,b,c,diagnosis"] + [f"P-{i:05d},{u:.4f},{v:.4f},{w:.4f},{'malignant' if u > 0 else 'benign'}" for i, (u, v, w) in enumerate(x)]
    (tmp_path / "pool.csv").write_text("\n".join(lines) + "\n")
    env = dict(os.environ, SLOW_TRAIN_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *[path for path in sys.path if path]])
    argv = [sys.executable, "-m", "privaudit", "audit", "mia", "--data", "pool.csv", "--label-col", "diagnosis", "--id-col", "patient_id"]
    argv += ["--train", "slow_train:train", "--references", "4", "--workers", "2", "--output", "out", "--no-history"]
    return tmp_path, argv, env


def test_ctrl_c_stops_within_seconds_keeps_finished_runs_and_a_rerun_resumes(setup):
    folder, argv, env = setup
    process = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240  # start-up, the probe and the first run, on a loaded machine
        while not _runs(folder / "out") and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        assert _runs(folder / "out"), f"no run was saved: {process.poll()} {process.stderr.read() if process.poll() is not None else ''}"
        kept = _runs(folder / "out")
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
        stopped = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, (process.returncode, stderr)
    assert stopped < 5, f"Ctrl-C took {stopped:.1f} s to stop the command"
    lines = [line for line in stderr.strip().splitlines() if not line.startswith("stage: ")]  # a log's lines for long stages
    assert len(lines) == 1 and lines[0].startswith("interrupted: ") and "run the same command again to resume" in lines[0], stderr
    assert f"{len(kept)} of 5 runs finished and are kept in" in lines[0] or "of 5 runs finished and are kept in" in lines[0]
    assert set(kept) <= set(_runs(folder / "out")), "a finished run was discarded"
    saved = len(_runs(folder / "out"))
    assert 1 <= saved < 5

    before = _calls(folder)
    rerun = subprocess.run(argv, cwd=folder, env=dict(env, SLOW_TRAIN_FAST="1"), capture_output=True, text=True, timeout=400)
    assert rerun.returncode == 0, rerun.stderr
    assert _calls(folder) - before == 5 - saved, "the rerun trained the saved runs again"
    assert (folder / "out" / "report.html").is_file() and "P-000" in (folder / "out" / "report.html").read_text()


def test_ctrl_c_in_a_command_without_a_runner_prints_one_line_and_exits_130(tmp_path, monkeypatch, capsys):
    """`bound` (and the other commands that keep nothing to resume) used to exit 130 in silence on Ctrl-C."""
    import privaudit.cli.stats as stats_commands
    from privaudit.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    (tmp_path / "s.csv").write_text("score,member\n0.1,1\n0.2,0\n0.3,1\n0.4,0\n")
    monkeypatch.setattr(stats_commands, "_bound_inputs", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["bound", "--scores", str(tmp_path / "s.csv"), "--delta", "1e-5", "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 130
    err = capsys.readouterr().err.strip()
    assert err == "interrupted: the command stopped before it finished; run it again" and not (tmp_path / "out").exists()
