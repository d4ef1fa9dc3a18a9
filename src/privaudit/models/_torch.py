"""Lazy access to PyTorch with an actionable error when the extra is missing."""

from __future__ import annotations


def require_torch():
    try:
        import torch
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("this feature needs PyTorch: pip install 'privaudit[lm]'") from error
    return torch


def default_device(device=None):
    """The given device, else CUDA when available, else the CPU."""
    torch = require_torch()
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
