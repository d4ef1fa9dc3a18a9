"""kill -9 during reference training, then the same command again: no finished model is retrained and the numbers are identical."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from privaudit.audits.mia.training import load_pool
from privaudit.runner import RunStore

pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = 6
MODELS = REFERENCES + 1  # and the target
#: what must be equal between the killed-and-resumed run and the uninterrupted one
NUMBERS = ("attacks", "most_vulnerable", "seeds", "num_records", "num_members", "num_population", "num_references", "conventions")


@pytest.fixture(scope="module")
def pool(tmp_path_factory) -> Path:
    """300 digits as the user's --data file."""
    digits = load_pool("digits", None, None)
    path = tmp_path_factory.mktemp("pool") / "pool.npz"
    np.savez(path, x=digits.x[:300], y=digits.y[:300])
    return path


def audit(pool: Path, output: Path, log: Path, delay: float) -> subprocess.Popen:
    """``privaudit audit mia`` with a logged user --train on ``pool``, as a process group of its own."""
    argv = [sys.executable, "-m", "privaudit", "audit", "mia", "--data", str(pool), "--train", "own_models.logged_train:train_logged"]
    argv += ["--references", str(REFERENCES)]
    argv += ["--output", str(output), "--no-history", "--workers", "1", "--seed", "4"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]))
    env.update(PRIVAUDIT_TEST_TRAIN_LOG=str(log), PRIVAUDIT_TEST_TRAIN_DELAY=str(delay))
    return subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def finish(process: subprocess.Popen) -> None:
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr.decode()


def trained_seeds(log: Path) -> list[int]:
    """The seeds of the audit's models that trained, in order; the check of --train before the audit (on 4 records per class) left out."""
    calls = [line.split() for line in log.read_text(encoding="utf-8").splitlines()]
    return [int(seed) for seed, rows in calls if int(rows) > 40]


def numbers(output: Path) -> dict:
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    return {key: data[key] for key in NUMBERS}


def test_kill_9_during_reference_training_then_resume(pool, tmp_path):
    killed, log = tmp_path / "killed", tmp_path / "killed.log"
    process = audit(pool, killed, log, delay=0.4)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if (killed / "runs").is_dir() and len(RunStore(killed / "runs").done()) >= 2:
                break
            time.sleep(0.02)
        assert process.poll() is None, "the audit ended before it could be killed"
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    store = RunStore(killed / "runs")
    finished = sorted(store.done())
    assert 2 <= len(finished) < MODELS and not (killed / "results.json").exists()
    stamps = {index: (store.path(index).stat().st_ino, store.path(index).stat().st_mtime_ns) for index in finished}
    finished_seeds = {store.load(index)["seed"] for index in finished}
    before = trained_seeds(log)

    finish(audit(pool, killed, log, delay=0.0))  # the same command again
    retrained = trained_seeds(log)[len(before) :]
    assert finished_seeds.isdisjoint(retrained) and len(retrained) == MODELS - len(finished)
    assert {index: (store.path(index).stat().st_ino, store.path(index).stat().st_mtime_ns) for index in finished} == stamps

    whole, whole_log = tmp_path / "whole", tmp_path / "whole.log"
    finish(audit(pool, whole, whole_log, delay=0.0))
    assert sorted(trained_seeds(whole_log)) == sorted(set(before) | set(retrained))  # every model trained once in all
    assert numbers(killed) == numbers(whole)
    assert json.loads((killed / "results.json").read_text(encoding="utf-8"))["num_trained"] == MODELS - len(finished)
