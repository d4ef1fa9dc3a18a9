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
