"""Resume only what is the same: the runner's key holds the content hash of every input a run reads.

The user changes ``--data``'s contents (same path) or their ``--train``
module's source and reruns into the same ``--output``: every model trains
again (counted through the training function's own log) and the numbers
are those of the new data; an unchanged rerun reuses every run and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = 4
MODELS = REFERENCES + 1  # and the target


def _write_data(path: Path, seed: int) -> None:
    """200 records, 4 features, a label that depends on them (a different table for each seed)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(200, 4))
    y = (x[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(int)
    rows = "".join(",".join(f"{v:.6f}" for v in row) + f",{label}\n" for row, label in zip(x, y))
    path.write_text("a,b,c,d,label\n" + rows, encoding="utf-8")


def _audit(folder: Path, log: Path) -> tuple[str, dict]:
    """Run ``privaudit audit mia`` with the logged --train in ``folder``; (stdout, results.json)."""
    argv = [sys.executable, "-m", "privaudit", "audit", "mia", "--data", "dd.csv", "--train", "mytrain:train_logged", "--label-col", "label"]
    argv += ["--references", str(REFERENCES), "--output", "O", "--no-history", "--workers", "1", "--seed", "3"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PRIVAUDIT_TEST_TRAIN_LOG=str(log))
    done = subprocess.run(argv, env=env, cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads((folder / "O" / "results.json").read_text(encoding="utf-8"))


def _trained(log: Path) -> int:
    """Models the audit trained since the log was last cleared (the probe of --train, on a handful of records, left out)."""
    calls = [line.split() for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return sum(int(rows) > 40 for _, rows in calls)


def _aucs(results: dict) -> list[float]:
    return [attack["auc"] for attack in results["attacks"]]


def test_changed_data_or_train_source_retrains_and_unchanged_reuses(tmp_path):
    shutil.copy(ROOT / "tests" / "own_models" / "logged_train.py", tmp_path / "mytrain.py")
    _write_data(tmp_path / "dd.csv", seed=0)
    log = tmp_path / "train.log"

    _, first = _audit(tmp_path, log)
    assert _trained(log) == MODELS and first["num_trained"] == MODELS

    stdout, again = _audit(tmp_path, log)  # nothing changed: every run reused
    assert _trained(log) == 0 and again["num_trained"] == 0 and _aucs(again) == _aucs(first)
    assert f"reused {MODELS} of {MODELS} finished runs from {Path('O') / 'runs'}" in stdout

    _write_data(tmp_path / "dd.csv", seed=1)  # same path, other contents
    stdout, changed = _audit(tmp_path, log)
    assert _trained(log) == MODELS and changed["num_trained"] == MODELS and "reused" not in stdout
    assert _aucs(changed) != _aucs(first)
    fresh = tmp_path / "fresh"  # the same audit from scratch gives the same numbers: nothing stale was mixed in
    fresh.mkdir()
    shutil.copy(tmp_path / "dd.csv", fresh / "dd.csv")
    shutil.copy(tmp_path / "mytrain.py", fresh / "mytrain.py")
    _, scratch = _audit(fresh, tmp_path / "fresh.log")
    assert _aucs(scratch) == _aucs(changed)

    with open(tmp_path / "mytrain.py", "a", encoding="utf-8") as source:
        source.write("\n# the user edited their training function\n")
    _, edited = _audit(tmp_path, log)
    assert _trained(log) == MODELS and edited["num_trained"] == MODELS
