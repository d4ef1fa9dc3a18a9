"""Every global RNG state, captured and compared bit for bit: torch (CPU, and CUDA when present), numpy's legacy state, ``random``."""

from __future__ import annotations

import random

import numpy as np


def global_rng_states() -> dict:
    """The state of every global RNG that a user's loop may draw from (torch's only when torch is installed)."""
    states = {"numpy": np.random.get_state(), "random": random.getstate()}
    try:
        import torch
    except ImportError:  # pragma: no cover - the torch-free install
        return states
    states["torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def assert_same_rng_states(before: dict, after: dict) -> None:
    """Exact equality of two :func:`global_rng_states`."""
    assert before.keys() == after.keys()
    if "torch" in before:
        import torch

        assert torch.equal(before["torch"], after["torch"])
        assert all(torch.equal(a, b) for a, b in zip(before.get("cuda", []), after.get("cuda", []), strict=True))
    (name_a, keys_a, *rest_a), (name_b, keys_b, *rest_b) = before["numpy"], after["numpy"]
    assert name_a == name_b and np.array_equal(keys_a, keys_b) and rest_a == rest_b
    assert before["random"] == after["random"]


def seed_everything(seed: int) -> None:
    """Seed every global RNG, as a user's seeded script does."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    torch.manual_seed(seed)
