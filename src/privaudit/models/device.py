"""Lazy access to PyTorch, with the extra to install when it is missing, and the default device."""

from __future__ import annotations

from .._core.extras import require


def require_torch():
    """PyTorch, or an ImportError that names the extra to install."""
    return require("torch", purpose="this feature")


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
