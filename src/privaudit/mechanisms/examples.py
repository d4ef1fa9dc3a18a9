"""Correct mechanisms that ship with privaudit, in the contract ``fn(dataset, size, rng) -> samples``.

They are the default audit's mechanism and examples to copy. Each states
its claim (``claim``: evidence, named in a warning and in the refusal when
no ``epsilon`` or ``rho`` is given, never the claim tested) and the
neighbouring relation the claim is made under (``neighbouring``, read when
the neighbour is searched rather than given).

>>> samples = laplace_sum(DEFAULT_DATASET, 4, np.random.default_rng(0))
>>> samples.shape
(4,)
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_DATASET", "EPSILON", "laplace_sum"]

#: the default audit's dataset: ten records in [0, 1]
DEFAULT_DATASET = np.linspace(0.0, 1.0, 10)
#: the ε that :func:`laplace_sum` is calibrated to
EPSILON = 1.0


def laplace_sum(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """The sum of the records clipped to [0, 1], plus Laplace noise of scale 1/ε: ε-DP for adding or removing a record."""
    return np.clip(dataset, 0.0, 1.0).sum() + rng.laplace(0.0, 1.0 / EPSILON, size)


laplace_sum.neighbouring = "add-remove"  # type: ignore[attr-defined]
laplace_sum.claim = {"epsilon": EPSILON, "delta": 0.0}  # type: ignore[attr-defined]
