"""Lazy access to PyTorch, with the extra to install when it is missing, and the default device."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .._core.extras import require


def require_torch():
    """PyTorch, or an ImportError that names the extra to install."""
    return require("torch", purpose="this feature")


@contextlib.contextmanager
def seeded_torch(seed: int | None) -> Iterator[None]:
    """Draw from torch's CPU generator seeded with ``seed`` (None: as it is) inside the block; every global RNG state is restored after.

    ``torch.manual_seed`` would also reseed every CUDA generator, which
    ``fork_rng(devices=[])`` does not restore: the CPU generator alone is
    seeded here, so the caller's CPU and CUDA random states are untouched.

    >>> import torch
    >>> before = torch.get_rng_state()
    >>> with seeded_torch(3):
    ...     first = torch.rand(2)
    >>> with seeded_torch(3):
    ...     second = torch.rand(2)
    >>> bool(torch.equal(first, second)), bool(torch.equal(before, torch.get_rng_state()))
    (True, True)
    """
    torch = require_torch()
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.default_generator.manual_seed(int(seed))
        yield


def default_device(device=None):
    """The given device, else CUDA when available, else the CPU."""
    torch = require_torch()
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def pad_rows(rows, device=None):
    """Right-pad integer rows into (tokens, mask): a long tensor and a float64 0/1 mask of real positions."""
    torch = require_torch()
    width = max(len(row) for row in rows)
    tokens = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.float64)
    for index, row in enumerate(rows):
        tokens[index, : len(row)] = torch.as_tensor(row, dtype=torch.long)
        mask[index, : len(row)] = 1.0
    return tokens.to(device), mask.to(device)
