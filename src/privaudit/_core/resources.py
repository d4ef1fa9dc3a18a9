"""Refuse work the machine cannot hold, before it starts: a memory estimate against the memory available.

>>> check_memory(1024, "a tiny audit")
>>> check_memory(2**80, "`num_slots` = 10^12")
Traceback (most recent call last):
...
ValueError: `num_slots` = 10^12 needs about 1.1e+15 GiB of memory; this machine has ... GiB available
"""

from __future__ import annotations

import os

__all__ = ["available_memory", "check_memory"]


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
