"""kill -9 during the shadow generations of ``audit synthetic-data``: a rerun keeps every finished generation and runs only the rest.

The user's generator (a subprocess's ``--generator``) is quick in the
command's own process (the probe, the release) and in the first shadow job
to start; every other shadow job sleeps 30 s. After that first job's run is
saved, the command is killed with SIGKILL (no clean-up at all); the rerun,
with every job quick, must call the generator in the workers exactly as many
times as there were jobs not yet saved.
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

pytest.importorskip("pandas")
pytest.importorskip("sklearn")

GENERATOR = """
import multiprocessing, os, time
from privaudit.audits.synthetic_data.generators import gaussian_copula

def generate(train_df, *, seed, n):
    if multiprocessing.current_process().name != "MainProcess":  # a shadow job of the runner, not the command's own call
        folder = os.environ["SLOW_GENERATOR_DIR"]
        open(os.path.join(folder, f"call-{os.getpid()}-{time.monotonic_ns()}"), "w").close()
        if not os.environ.get("SLOW_GENERATOR_FAST"):
            try:  # the first job to claim the marker is quick; every other one sleeps
                os.close(os.open(os.path.join(folder, "quick"), os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                time.sleep(30)
    return gaussian_copula(train_df, seed=seed, n=n)
"""
SHADOWS, TARGETS = 4, 2  # 8 shadow generations


def _runs(output: Path) -> list[Path]:
    return sorted(output.glob("runs/**/run-*.json"))


def _calls(folder: Path) -> int:
    return len(list(folder.glob("call-*")))


def test_kill_9_during_the_shadow_generations_then_a_rerun_repeats_no_finished_one(tmp_path):
    (tmp_path / "slow_generator.py").write_text(GENERATOR)
    rng = np.random.default_rng(0)
    for name, size in (("train", 60), ("holdout", 60)):
        x = rng.normal(size=(size, 3))
        rows = [f"{name[0]}-{i:03d},{a:.4f},{b:.4f},{c:.4f},{'x' if a > 0 else 'y'}" for i, (a, b, c) in enumerate(x)]
        (tmp_path / f"{name}.csv").write_text("\n".join(["record,a,b,c,kind", *rows]) + "\n")
    env = dict(os.environ, SLOW_GENERATOR_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *[path for path in sys.path if path]])
    argv = [sys.executable, "-m", "privaudit", "audit", "synthetic-data", "--train", "train.csv", "--holdout", "holdout.csv", "--id-col", "record"]
    argv += ["--generator", "slow_generator:generate", "--shadows", str(SHADOWS), "--shadow-targets", str(TARGETS), "--canaries", "0"]
    argv += ["--workers", "2", "--output", "out", "--no-history"]
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240  # start-up and the first generation, on a loaded machine
        while not _runs(tmp_path / "out") and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        assert _runs(tmp_path / "out"), f"no run was saved: {process.poll()} {process.stderr.read() if process.poll() is not None else ''}"
        os.killpg(process.pid, signal.SIGKILL)  # the command and its workers, as the kernel's OOM killer or `kill -9 -PGID` would
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    saved = len(_runs(tmp_path / "out"))
    assert 1 <= saved < SHADOWS * TARGETS and not (tmp_path / "out" / "results.json").exists()

    before = _calls(tmp_path)
    rerun = subprocess.run(argv, cwd=tmp_path, env=dict(env, SLOW_GENERATOR_FAST="1"), capture_output=True, text=True, timeout=400)
    assert rerun.returncode == 0, rerun.stderr
    assert _calls(tmp_path) - before == SHADOWS * TARGETS - saved, "the rerun generated the saved shadow releases again"
    assert f"reused {saved} of {SHADOWS * TARGETS} finished runs" in " ".join(rerun.stdout.split() + rerun.stderr.split())
    assert (tmp_path / "out" / "results.json").is_file()
