"""What this process may use: refuse work the machine cannot hold (memory), and size thread pools to the CPUs it may run on.

>>> check_memory(1024, "a tiny audit")
>>> check_memory(2**80, "`num_slots` = 10^12")
Traceback (most recent call last):
...
ValueError: `num_slots` = 10^12 needs about 1.1e+15 GiB of memory; this machine has ... GiB available
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["available_memory", "check_memory", "cgroup_cpu_quota", "threads_per_worker", "torch_threads", "usable_cpus"]


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


@contextlib.contextmanager
def torch_threads(workers: int = 1) -> Iterator[int]:
    """Run privaudit's own torch training with :func:`threads_per_worker` threads, restoring the caller's setting after.

    torch's default is the machine's core count, whatever the affinity mask,
    the container's quota or the runner's other workers: on a busy 2-core
    machine that oversubscribes the cores many times over. torch is not
    imported for this (a scikit-learn audit never loads it); a torch
    imported later inside the block is set when it is first used here.
    """
    threads = threads_per_worker(workers)
    torch = sys.modules.get("torch")
    previous = torch.get_num_threads() if torch is not None else None
    if torch is not None and previous != threads:
        torch.set_num_threads(threads)
    # not imported yet: OpenMP reads this when torch loads inside the block (a user's own setting is kept)
    variables = {} if torch is not None else {name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if name not in os.environ}
    os.environ.update(variables)
    try:
        yield threads
    finally:
        for name in variables:
            os.environ.pop(name, None)
        torch = sys.modules.get("torch")
        if torch is not None and previous is not None and torch.get_num_threads() != previous:
            torch.set_num_threads(previous)
