"""The user's code through the command line: found in the working directory without shadowing installed packages, its exits and
failures one error line, and Ctrl-C after the shadow runs saying what was kept.

Every case runs ``python -m privaudit audit synthetic-data`` in a folder
holding the user's generator module (found there, as the docs say) and two
small tables.
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

import privaudit

pytest.importorskip("pandas")
pytest.importorskip("sklearn")
pytest.importorskip("pyarrow")

SRC = Path(privaudit.__file__).resolve().parent.parent  # the privaudit under test, for the commands run here

GENERATORS = """
import multiprocessing, os, sys, time
from os import _exit as bound_exit
from privaudit.audits.synthetic_data.generators import gaussian_copula

def in_worker():
    return multiprocessing.current_process().name != "MainProcess"

def wrong_columns(train_df, *, seed, n):
    return gaussian_copula(train_df, seed=seed, n=n).iloc[:, :-1]

def exits(train_df, *, seed, n):
    sys.exit(0)

def exits_at_once(train_df, *, seed, n):
    os._exit(0)

def raises_in_a_shadow(train_df, *, seed, n):
    if in_worker():
        raise KeyError("shadow")
    return gaussian_copula(train_df, seed=seed, n=n)

def ends_its_shadow_worker(train_df, *, seed, n):
    if in_worker():
        bound_exit(0)  # os._exit bound before the call: the worker process ends
    return gaussian_copula(train_df, seed=seed, n=n)

def bad_conventions(train_df, *, seed, n):
    return gaussian_copula(train_df, seed=seed, n=n)

def _conventions(train_df):
    raise RuntimeError("no conventions today")

bad_conventions.conventions = _conventions

MAIN_CALLS = []

def slow_after_the_shadows(train_df, *, seed, n):
    if not in_worker():
        MAIN_CALLS.append(n)
        if len(MAIN_CALLS) == 3:  # the probe, the release, then the canary run: every shadow run is saved by now
            open(os.environ["READY_FILE"], "w").close()
            time.sleep(120)
    return gaussian_copula(train_df, seed=seed, n=n)
"""
SHADOWING = "open('SHADOW_RAN', 'w').close()\nraise ImportError('the working directory shadowed an installed package')\n"


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "gens.py").write_text(GENERATORS, encoding="utf-8")
    rng = np.random.default_rng(0)
    for name in ("train", "holdout"):
        x = rng.normal(size=(40, 3))
        rows = [f"{name[0]}-{i:03d},{a:.4f},{b:.4f},{c:.4f},{'x' if a > 0 else 'y'}" for i, (a, b, c) in enumerate(x)]
        (tmp_path / f"{name}.csv").write_text("\n".join(["record,a,b,c,kind", *rows]) + "\n", encoding="utf-8")
    return tmp_path


def _argv(generator: str, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "privaudit", "audit", "synthetic-data", "--train", "train.csv", "--holdout", "holdout.csv", "--id-col", "record"]
    return argv + ["--generator", generator, "--output", "out", "--no-history", "--workers", "1", *extra]


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1", **extra)  # the folder itself is on no path: only the working directory


def _run(folder: Path, generator: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(_argv(generator, *extra), cwd=folder, env=_env(), capture_output=True, text=True, timeout=300)


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if not line.startswith("stage:")]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_a_pandas_py_in_the_working_directory_never_runs_and_the_users_module_there_is_found(folder):
    (folder / "pandas.py").write_text(SHADOWING, encoding="utf-8")
    done = _run(folder, "gens:wrong_columns", "--shadows", "0", "--canaries", "0")
    assert not (folder / "SHADOW_RAN").exists(), done.stderr
    assert "your --generator must return" in _one_error_line(done)  # gens.py of the working directory was imported and called


def test_a_module_of_the_working_directory_named_like_an_installed_one_is_refused_not_swapped(folder):
    (folder / "email.py").write_text((folder / "gens.py").read_text(encoding="utf-8"), encoding="utf-8")
    line = _one_error_line(_run(folder, "email:wrong_columns", "--shadows", "0", "--canaries", "0"))
    assert "`--generator` 'email:wrong_columns'" in line and "rename your module" in line


@pytest.mark.parametrize(
    ("generator", "says"),
    [
        ("gens:exits", "`--generator` 'gens:exits' called sys.exit(0); it must return"),
        ("gens:exits_at_once", "`--generator` 'gens:exits_at_once' called os._exit(0); it must return"),
        ("gens:bad_conventions", "(its conventions attribute)' raised RuntimeError: no conventions today"),
    ],
)
def test_a_generator_that_exits_or_fails_is_one_error_line_with_exit_2_and_nothing_written(folder, generator, says):
    line = _one_error_line(_run(folder, generator, "--shadows", "0", "--canaries", "0"))
    assert says in line
    assert not (folder / "out" / "results.json").exists()


@pytest.mark.parametrize(
    ("generator", "says"),
    [
        ("gens:raises_in_a_shadow", "`--generator` 'gens:raises_in_a_shadow' raised KeyError: 'shadow'"),
        ("gens:ends_its_shadow_worker", "a worker process died while running `--generator` 'gens:ends_its_shadow_worker'"),
    ],
)
def test_a_generator_failing_in_a_shadow_worker_is_one_error_line(folder, generator, says):
    line = _one_error_line(_run(folder, generator, "--shadows", "4", "--shadow-targets", "2", "--canaries", "0"))
    assert says in line


def test_ctrl_c_after_every_shadow_run_was_saved_says_what_was_kept(folder):
    ready = folder / "ready"
    argv = _argv("gens:slow_after_the_shadows", "--shadows", "4", "--shadow-targets", "2", "--canaries", "20")
    process = subprocess.Popen(argv, cwd=folder, env=_env(READY_FILE=str(ready)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 280
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ready.exists(), process.stderr.read() if process.poll() is not None else "the canary run never started"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr
    line = next(line for line in stderr.splitlines() if line.startswith("interrupted: "))
    assert line == f"interrupted: 8 finished runs are kept in {str(Path('out') / 'runs')!r}; run the same command again to resume them"
