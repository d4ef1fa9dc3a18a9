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

from .._core.validation import check_choice, check_count, check_positive

__all__ = ["CANARY_KINDS", "GradientCanary"]

CANARY_KINDS = ("dirac", "constant", "random")
_STEPS_PER_STREAM = 1024


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

    def directions(self, num_slots: int, *, seed: int = 0, step: int) -> np.ndarray:
        """Unit directions, one row per slot, for step ``step``: row ``step`` of :meth:`draw`."""
        step = check_count(step, "step")
        if not self.moving:
            return self._draw(np.random.default_rng([seed, 0]), 1, check_count(num_slots, "num_slots"))[0]
        start = step - step % _STEPS_PER_STREAM
        return self.draw(step - start + 1, num_slots, seed=seed, first_step=start)[-1]

    def draw(self, num_steps: int, num_slots: int, *, seed: int = 0, first_step: int = 0) -> np.ndarray:
        """Unit directions of steps ``first_step, …, first_step + num_steps - 1``: shape (steps, slots, slot_size).

        Deterministic in ``seed`` and the step: a moving canary's directions come
        from one random stream per block of 1,024 steps (so all steps are drawn
        at once, without a generator per step), a static canary's from one draw
        shared by every step (returned as a read-only broadcast view).

        >>> canary = GradientCanary(kind="random", slot_size=3)
        >>> every = canary.draw(5, 4, seed=1)
        >>> every.shape, bool(np.array_equal(every[3], canary.directions(4, seed=1, step=3)))
        ((5, 4, 3), True)
        """
        num_steps = check_count(num_steps, "num_steps")
        num_slots = check_count(num_slots, "num_slots")
        first_step = check_count(first_step, "first_step")
        if not self.moving:
            return np.broadcast_to(self._draw(np.random.default_rng([seed, 0]), 1, num_slots), (num_steps, num_slots, self.slot_size))
        out = np.empty((num_steps, num_slots, self.slot_size))
        step, stop = first_step, first_step + num_steps
        while step < stop:  # one stream per block of steps; a block's rows are drawn in order, so any prefix of it is reproducible
            block, offset = divmod(step, _STEPS_PER_STREAM)
            count = min(stop - step, _STEPS_PER_STREAM - offset)
            draws = self._draw(np.random.default_rng([seed, 1, block]), offset + count, num_slots)
            out[step - first_step : step - first_step + count] = draws[offset:]
            step += count
        return out

    def _draw(self, rng: np.random.Generator, num_steps: int, num_slots: int) -> np.ndarray:
        if self.kind == "dirac":
            out = np.zeros((num_steps, num_slots, self.slot_size))
            if self.slot_size == 1:
                out[...] = 1.0
            else:
                np.put_along_axis(out, rng.integers(0, self.slot_size, (num_steps, num_slots, 1)), 1.0, axis=2)
            return out
        if self.kind == "constant":
            return np.full((num_steps, num_slots, self.slot_size), 1.0 / np.sqrt(self.slot_size))
        draws = rng.standard_normal((num_steps, num_slots, self.slot_size))
        return draws / np.linalg.norm(draws, axis=2, keepdims=True)
