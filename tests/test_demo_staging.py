"""No staging folder outlives a killed run: ``privaudit demo`` killed with SIGKILL leaves ``.NAME.privaudit-staging-PID-*``, and the next command writing NAME removes it.

The demo writes through :func:`privaudit._core.files.staged_output` (so does every command with ``--output``, ``bound`` among them, which takes seconds).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from cli_helpers import run_cli, start_demo

LOCK = ".privaudit-lock"  # the lock file staged_output holds inside its scratch folder


def _scores(folder: Path) -> list[str]:
    rng = np.random.default_rng(0)
    np.savetxt(folder / "in.txt", rng.normal(1.0, 1.0, 200))
    np.savetxt(folder / "out.txt", rng.normal(0.0, 1.0, 200))
    return ["bound", "--in", str(folder / "in.txt"), "--out", str(folder / "out.txt")]


def _staging(folder: Path, name: str) -> list[Path]:
    return sorted(folder.glob(f".{name}.privaudit-staging-*"))


def test_a_stale_staging_folder_of_a_dead_run_is_removed_by_the_next_write(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its PID is now free: the run that made the folder below is gone
    stale = tmp_path / f".privaudit-demo.privaudit-staging-{dead.pid}-k9x1"
    stale.mkdir()
    (stale / LOCK).write_bytes(b"")  # as staged_output left it: the lock file, no process holding its lock
    (stale / "results.json").write_text('{"half": "written"}', encoding="utf-8")
    output = tmp_path / "privaudit-demo"
    code, _, stderr = run_cli([*_scores(tmp_path), "--output", output])
    assert code == 0, stderr
    assert not stale.exists() and _staging(tmp_path, "privaudit-demo") == []
    assert (output / "results.json").is_file() and "half" not in (output / "results.json").read_text(encoding="utf-8")


def test_the_demo_killed_mid_run_leaves_nothing_after_the_next_run(tmp_path):
    output = tmp_path / "privaudit-demo"
    demo = start_demo(output)
    try:
        deadline = time.monotonic() + 120
        while not _staging(tmp_path, output.name) and demo.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        found = _staging(tmp_path, output.name)
        assert found, "the demo never made its staging folder"
        os.kill(demo.pid, signal.SIGKILL)  # mid-run: the demo's first audit is still working in the staging folder
    finally:
        demo.kill()
        demo.wait()
    assert demo.returncode == -signal.SIGKILL and all(folder.is_dir() for folder in found) and not output.exists()
    code, _, stderr = run_cli([*_scores(tmp_path), "--output", output])
    assert code == 0, stderr
    assert _staging(tmp_path, output.name) == [] and (output / "results.json").is_file()
