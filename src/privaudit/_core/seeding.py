"""Seeds, one idiom: every random step takes an integer seed, and sub-steps get child seeds.

Child seeds are spawned from :class:`numpy.random.SeedSequence` in the order
of their names, so a run's sub-steps are independent and reproducible from
the one seed it records.

>>> seeds = child_seeds(0, ["training", "canaries"])
>>> seeds == child_seeds(0, ["training", "canaries"]), seeds["training"] != seeds["canaries"]
(True, True)
>>> check_seed(1.5)
Traceback (most recent call last):
...
ValueError: `seed` must be an integer in [0, 9223372036854775807], got 1.5
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["MAX_SEED", "check_seed", "child_seeds"]

MAX_SEED = 2**63 - 1


def check_seed(value: object, name: str = "seed") -> int:
    """``value`` as a seed: an integer in [0, 2⁶³ − 1], never a float or a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) <= MAX_SEED:
        raise ValueError(f"`{name}` must be an integer in [0, {MAX_SEED}], got {value!r}")
    return int(value)


def child_seeds(seed: int, names: Iterable[str]) -> dict[str, int]:
    """One seed in [0, 2³¹) per name, spawned from ``seed`` in the order given."""
    names = list(names)
    states = np.random.SeedSequence(check_seed(seed)).spawn(len(names))
    return {name: int(state.generate_state(1)[0] % 2**31) for name, state in zip(names, states, strict=True)}
