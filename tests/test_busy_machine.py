"""A busy machine: privaudit's own thread pools are sized to the CPUs this process may use (affinity and cgroup quota), shared among the runner's workers."""

from __future__ import annotations

import os

import pytest

from privaudit._core import resources
from privaudit._core.resources import cgroup_cpu_quota, threads_per_worker, torch_threads, usable_cpus


def test_usable_cpus_follow_the_affinity_mask_and_the_quota(monkeypatch, tmp_path):
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no affinity mask on this system")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(resources, "cgroup_cpu_quota", lambda: None)
    assert usable_cpus() == 8  # the mask, not the machine's 64
    monkeypatch.setattr(resources, "cgroup_cpu_quota", lambda: 2.5)
    assert usable_cpus() == 2  # a 2.5-CPU quota: two threads at full speed
    monkeypatch.setattr(resources, "cgroup_cpu_quota", lambda: 0.5)
    assert usable_cpus() == 1


def test_workers_share_the_cpus_and_never_oversubscribe(monkeypatch):
    monkeypatch.setattr(resources, "usable_cpus", lambda: 8)
    assert [threads_per_worker(workers) for workers in (1, 2, 3, 4, 8, 16)] == [8, 4, 2, 2, 1, 1]
    assert all(threads_per_worker(workers) * workers <= 8 for workers in range(1, 9))


def test_cgroup_v1_quota(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota(tmp_path) == 3.0
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_quota(tmp_path) is None


def test_torch_threads_sets_and_restores_the_callers_setting(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(resources, "usable_cpus", lambda: 1)
    before = torch.get_num_threads()
    with torch_threads() as threads:
        assert threads == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_each_worker_runs_with_its_share_of_threads(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from privaudit.runner import RunStore, call_task, run_all

    assert call_task(_threads_seen, {"index": 0}, 1)["threads"] == 1
    results = run_all(_threads_seen, [{"index": 0}, {"index": 1}], store=RunStore(tmp_path), max_workers=2)
    assert all(result["threads"] == threads_per_worker(2) for result in results)


def _threads_seen(config: dict) -> dict:
    import torch

    return {"index": config["index"], "threads": torch.get_num_threads()}


# -- torch first imported inside the block, an affinity mask, OpenMP's wait policy: in fresh processes ----------


def _python(code: str, **env: str) -> str:
    """``code`` run by a fresh interpreter (torch not yet imported) with privaudit's sources and no thread variables unless given; its stdout."""
    import subprocess
    import sys
    from pathlib import Path

    import privaudit

    clean = {key: value for key, value in os.environ.items() if key not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(privaudit.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_torch_first_imported_inside_the_block_gets_its_own_default_back():
    pytest.importorskip("torch")
    default = int(_python("import torch; print(torch.get_num_threads())"))  # what this user's torch picks by itself
    if default < 2:
        pytest.skip("torch's own default here is 1 thread: nothing to tell apart")
    code = (
        "import os, sys\n"
        "from privaudit._core import resources\n"
        "resources.usable_cpus = lambda: 1\n"
        "with resources.torch_threads() as threads:\n"
        "    import torch\n"
        "    inside = torch.get_num_threads()\n"
        "print(threads, inside, torch.get_num_threads(), 'OMP_NUM_THREADS' in os.environ, 'MKL_NUM_THREADS' in os.environ, sys.meta_path.count(None))\n"
    )
    threads, inside, after, omp, mkl, _ = _python(code).split()
    assert (int(threads), int(inside)) == (1, 1)  # privaudit's own training: the usable CPUs
    assert int(after) == default, "the user's torch kept privaudit's thread count"
    assert omp == mkl == "False"  # and no variable left behind for OpenMP to read later


def test_threads_follow_an_affinity_mask_set_in_the_process():
    torch = pytest.importorskip("torch")
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs an affinity mask of 2 CPUs or more")
    del torch
    code = (
        "import os\n"
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from privaudit._core import resources\n"
        "with resources.torch_threads() as threads:\n"
        "    import torch\n"
        "    print(resources.usable_cpus(), threads, torch.get_num_threads(), os.cpu_count())\n"
    )
    cpus, threads, inside, machine = map(int, _python(code).split())
    assert (cpus, threads, inside) == (1, 1, 1) and machine >= 2  # the mask's one CPU, not the machine's count


def test_the_command_lets_openmp_threads_wait_passively_and_keeps_a_users_policy(monkeypatch):
    from privaudit.cli import main

    monkeypatch.setenv("OMP_WAIT_POLICY", "")  # records the variable as it was, so that the test leaves the environment as it found it
    for set_by_user, expected in ((None, "PASSIVE"), ("ACTIVE", "ACTIVE")):
        if set_by_user is None:
            monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
        else:
            monkeypatch.setenv("OMP_WAIT_POLICY", set_by_user)
        with pytest.raises(SystemExit) as stopped:
            main(["--version"])
        assert stopped.value.code in (0, None) and os.environ["OMP_WAIT_POLICY"] == expected


# -- the load test: the demo's PANORAMIA stage beside a CPU hog, against the same stage as the machine is -------


@pytest.mark.load
def test_the_panoramia_stage_beside_a_cpu_hog_stays_within_three_times_its_quiet_time(tmp_path):
    """benchmarks/busy_machine.py --micro --hogs 1: quiet and busy runs alternately (drift in others' load falls on both), in one process.

    The median over 5 pairs of the busy run's time over the quiet run's: a
    ratio of times measured in the same run, not a time, so the machine's
    speed cancels, and one run caught in someone else's burst moves it
    little. Beside H hogs a stage keeping T threads busy runs about
    (T + H) / T times slower: at most 2 for one hog. One hog per core (the
    benchmark's default) reaches 3 by that arithmetic alone on a loaded
    machine (docs/performance.md), so it stays in the benchmark. With
    OpenMP's default spinning waits, one quiet and one busy run of this
    stage took 21 s and 42 s instead of about 1 s and 2 s.
    """
    import json
    import statistics
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    pytest.importorskip("mbi")
    pytest.importorskip("statsmodels")
    import privaudit

    root = Path(__file__).resolve().parents[1]
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(privaudit.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))
    output = tmp_path / "busy.json"
    argv = [sys.executable, str(root / "benchmarks" / "busy_machine.py"), "--micro", "--pairs", "5", "--hogs", "1", "--output", str(output)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    measured = json.loads(output.read_text())
    assert measured["omp_wait_policy"] == "PASSIVE" and measured["torch_threads"] == measured["usable_cpus"] and measured["hog_processes"] == 1
    ratio = statistics.median(busy / quiet for quiet, busy in zip(measured["quiet_s"], measured["busy_s"]))
    # the times are kept to 0.1 ms, so the ratio recomputed from them matches the reported one (at 0.01 s, rounding moved it 3%)
    assert abs(ratio - measured["ratio"]) < 0.01 and len(measured["busy_s"]) == len(measured["quiet_s"]) == 5
    assert ratio <= 3, f"busy {measured['busy_s']} s against quiet {measured['quiet_s']} s"
