"""What this process may use: refuse work the machine cannot hold (memory), and size thread pools to the CPUs it may run on.

>>> check_memory(1024, "a tiny audit")
>>> check_memory(2**80, "`num_slots` = 10^12")
Traceback (most recent call last):
...
ValueError: `num_slots` = 10^12 needs about 1.1e+15 GiB of memory; this machine has ... GiB available
"""

from __future__ import annotations

import contextlib
import importlib.abc
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["available_memory", "check_memory", "cgroup_cpu_quota", "passive_openmp_waits", "threads_per_worker", "torch_threads", "usable_cpus"]


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable on Linux; else the physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 2**63 - 1  # unknown: refuse nothing


def check_memory(estimate: int, what: str) -> None:
    """A ValueError when ``estimate`` bytes exceed the memory available; ``what`` names the setting responsible."""
    available = available_memory()
    if estimate > available:
        raise ValueError(f"{what} needs about {estimate / 2**30:.2g} GiB of memory; this machine has {available / 2**30:.3g} GiB available")


def cgroup_cpu_quota(root: str | os.PathLike[str] = "/sys/fs/cgroup") -> float | None:
    """CPUs this container may use by its cgroup quota (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``), or None when unlimited or unknown.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "cpu.max").write_text("150000 100000")
    >>> cgroup_cpu_quota(folder)
    1.5
    >>> _ = (folder / "cpu.max").write_text("max 100000")
    >>> cgroup_cpu_quota(folder) is None
    True
    """
    base = Path(root)
    try:
        quota, period = (base / "cpu.max").read_text(encoding="ascii").split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((base / "cpu" / "cpu.cfs_quota_us").read_text(encoding="ascii"))
        period_us = int((base / "cpu" / "cpu.cfs_period_us").read_text(encoding="ascii"))
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (not the machine's count), capped by the cgroup quota; at least 1.

    >>> 1 <= usable_cpus() <= (os.cpu_count() or 1)
    True
    """
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        count = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        count = min(count, max(1, math.floor(quota)))  # a 1.5-CPU quota runs one thread at full speed, not two at three quarters
    return max(1, count)


def threads_per_worker(workers: int = 1) -> int:
    """Threads for each of ``workers`` processes sharing the usable CPUs, never more in total than there are (at least 1 each).

    >>> threads_per_worker(10**6)
    1
    """
    return max(1, usable_cpus() // max(1, int(workers)))


def passive_openmp_waits() -> None:
    """Let OpenMP's threads sleep while they wait, not spin (``OMP_WAIT_POLICY=PASSIVE``), unless the environment already sets a policy.

    The ``privaudit`` command calls this first, before torch or scikit-learn
    loads its OpenMP runtime (which reads the variable once, at load).
    libgomp's default spins at every barrier (about 300,000 turns): on a busy
    machine a spinning thread holds the core that the thread it waits for
    needs, and each parallel step waits for the scheduler. Measured on a
    shared 2-core machine at a load average of 12, 40 steps of a 256-wide
    MLP with 2 torch threads took 3.3-10.7 s spinning and 0.35-1.05 s
    passive; beside 2 busy-loop processes, 11-42 s and 0.25-1.7 s
    (docs/performance.md). The Python API leaves the environment alone: it
    is the user's process.

    >>> import os, unittest.mock
    >>> with unittest.mock.patch.dict(os.environ, {"OMP_WAIT_POLICY": "ACTIVE"}):
    ...     passive_openmp_waits()
    ...     os.environ["OMP_WAIT_POLICY"]
    'ACTIVE'
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class _ThreadsOnImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A finder that, when torch is first imported, records torch's own thread count and sets ``threads``; removed by :func:`torch_threads`."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.previous: int | None = None
        self.loader: Any = None

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "torch":
            return None
        for finder in sys.meta_path:  # the spec the other finders would give, with this object as its loader
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                self.loader, spec.loader = spec.loader, self
                return spec
        return None

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        module.__spec__.loader = module.__loader__ = self.loader  # torch keeps its own loader (importlib.resources reads through it)
        self.previous = module.get_num_threads()  # torch's own default, the user's setting had privaudit never run
        if self.previous != self.threads:
            module.set_num_threads(self.threads)


@contextlib.contextmanager
def torch_threads(workers: int = 1) -> Iterator[int]:
    """Run privaudit's own torch training with :func:`threads_per_worker` threads, restoring the caller's setting after.

    torch's default is the machine's core count, whatever the affinity mask,
    the container's quota or the runner's other workers: on a busy 2-core
    machine that oversubscribes the cores many times over. torch is not
    imported for this (a scikit-learn audit never loads it): when it is first
    imported inside the block, its own default is read as it loads, the
    count set, and that default restored on the way out, as if it had been
    imported outside. No environment variable is touched (OpenMP reads them
    once per process, so they would outlive the block).
    """
    threads = threads_per_worker(workers)
    torch = sys.modules.get("torch")
    hook, previous = None, None
    if torch is not None:
        previous = torch.get_num_threads()
        if previous != threads:
            torch.set_num_threads(threads)
    else:
        hook = _ThreadsOnImport(threads)
        sys.meta_path.insert(0, hook)
    try:
        yield threads
    finally:
        if hook is not None:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(hook)
            previous = hook.previous
        torch = sys.modules.get("torch")
        if torch is not None and previous is not None and torch.get_num_threads() != previous:
            torch.set_num_threads(previous)
