"""`kill -9` on `privaudit audit blackbox` leaves no process behind: pool workers, the resource tracker and (opt-in) a local Ray instance die with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import privaudit

SOURCE = str(Path(privaudit.__file__).resolve().parents[1])  # the child imports this very privaudit, not another install

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux) to follow descendants")


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(parent PID, state, start time) of ``pid`` from /proc, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], fields[19]


def descendants(root: int) -> dict[int, str]:
    """Every live descendant of ``root``, with its start time (so a reused PID is not mistaken for it)."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (info := _stat(int(name))) is not None:
            table[int(name)] = info
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _, start) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = start
                frontier.append(pid)
    return found


def alive(pid: int, start: str) -> bool:
    info = _stat(pid)
    return info is not None and info[1] != "Z" and info[2] == start  # a zombie has exited; only its reaper is missing


def kill_and_watch(argv: list[str], expected: int, settle: float, tmp_path: Path, wait: float = 10.0) -> dict[int, str]:
    """Start ``argv`` in its own process group, wait for ``expected`` descendants, SIGKILL the parent alone; return the survivors after ``wait`` s."""
    process = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))},
        cwd=tmp_path,
    )
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while len(seen) < expected:
            assert process.poll() is None, "the audit ended before its workers could be seen"
            assert time.monotonic() < deadline, f"only {len(seen)} descendants appeared"
            seen.update(descendants(process.pid))
            time.sleep(0.1)
        time.sleep(settle)
        seen.update(descendants(process.pid))
        os.kill(process.pid, signal.SIGKILL)  # the parent only: its children must notice by themselves
        process.wait()
        deadline = time.monotonic() + wait
        while any(alive(pid, start) for pid, start in seen.items()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return {pid: Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")[:100] for pid, start in seen.items() if alive(pid, start)}
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # clean up whatever survived, in the group this test started
        except ProcessLookupError:
            pass


def test_sigkill_on_the_blackbox_audit_leaves_no_worker_or_resource_tracker(tmp_path):
    config = tmp_path / "config.json"
    # long enough that both workers are busy training when the parent is killed
    config.write_text(json.dumps({"dataset": "breast-cancer", "noise_multiplier": 0.5, "num_steps": 20000, "num_models_per_side": 5, "seed": 1}))
    argv = [
        sys.executable,
        "-m",
        "privaudit",
        "audit",
        "blackbox",
        "--config",
        str(config),
        "--output",
        str(tmp_path / "out"),
        "--workers",
        "2",
        "--no-history",
    ]
    survivors = kill_and_watch(argv, expected=3, settle=1.0, tmp_path=tmp_path)  # the resource tracker and two workers
    assert survivors == {}


@pytest.mark.skipif(not os.environ.get("PRIVAUDIT_SLOW_TESTS"), reason="starts a local Ray instance (about 40 s); set PRIVAUDIT_SLOW_TESTS=1")
def test_sigkill_on_the_blackbox_audit_with_local_ray_leaves_no_ray_process(tmp_path):
    pytest.importorskip("ray")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"dataset": "breast-cancer", "noise_multiplier": 0.5, "num_steps": 20000, "num_models_per_side": 5, "seed": 1}))
    argv = [
        sys.executable,
        "-m",
        "privaudit",
        "audit",
        "blackbox",
        "--config",
        str(config),
        "--output",
        str(tmp_path / "out"),
        "--workers",
        "2",
        "--backend",
        "ray",
        "--no-history",
    ]
    # gcs, raylet, agents, two task workers, ...: Ray's own fate sharing ends the servers and workers at once; its dashboard
    # and runtime-env agents poll the raylet and were measured to exit 10-60 s later
    survivors = kill_and_watch(argv, expected=8, settle=5.0, tmp_path=tmp_path, wait=90.0)
    assert survivors == {}
