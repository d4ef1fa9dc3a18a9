"""Gradient canaries for white-box DP-SGD audits (Tight Auditing §5.3, Appendix C.2).

A canary is a per-example gradient that lives only on *audit coordinates*:
coordinates appended to the model's gradient that no real example touches.
The audit block of ``num_slots × slot_size`` coordinates is cut into slots;
each slot carries at most one canary per step, so canaries in different
slots are orthogonal and their observations independent.

Canary shapes (each a unit direction u in its slot, scaled to ``norm`` clip
norms before clipping):

* ``"dirac"``: one coordinate set (the paper's best);
* ``"constant"``: every coordinate of the slot equal;
* ``"random"``: a Gaussian direction.

A ``moving`` canary is re-drawn every step; a static one is drawn once.
Numpy only: the directions are handed to whichever trainer is audited.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..stats._validation import check_choice, check_count, check_positive

__all__ = ["CANARY_KINDS", "GradientCanary"]

CANARY_KINDS = ("dirac", "constant", "random")


@dataclasses.dataclass(frozen=True)
class GradientCanary:
    """Shape, movement, slot size and norm of a gradient canary.

    ``norm`` is in units of the clip norm C. A correct DP-SGD clips every
    per-example gradient to C, so any ``norm`` >= 1 gives the same
    observations; a larger one exposes implementations that do not clip
    each example (the bug detector uses 100).

    >>> canary = GradientCanary(kind="dirac", slot_size=4)
    >>> canary.directions(2, seed=0, step=0).sum(axis=1).tolist()
    [1.0, 1.0]
    >>> GradientCanary(kind="spike")
    Traceback (most recent call last):
    ...
    ValueError: `kind` must be one of 'dirac', 'constant', 'random', got 'spike'
    """

    kind: str = "dirac"
    moving: bool = True
    slot_size: int = 8
    norm: float = 1.0

    def __post_init__(self):
        check_choice(self.kind, "kind", CANARY_KINDS)
        check_count(self.slot_size, "slot_size", minimum=1)
        check_positive(self.norm, "norm")

    def directions(self, num_slots: int, *, seed: int, step: int) -> np.ndarray:
        """Unit directions, one row per slot, for step ``step`` (deterministic in seed and step)."""
        rng = np.random.default_rng([seed, 1, step] if self.moving else [seed, 0])
        if self.kind == "dirac":
            out = np.zeros((num_slots, self.slot_size))
            out[np.arange(num_slots), rng.integers(0, self.slot_size, num_slots)] = 1.0
            return out
        if self.kind == "constant":
            return np.full((num_slots, self.slot_size), 1.0 / np.sqrt(self.slot_size))
        draws = rng.standard_normal((num_slots, self.slot_size))
        return draws / np.linalg.norm(draws, axis=1, keepdims=True)
