"""Trade-off functions of f-DP (Dong, Roth and Su; Tight Auditing §2.2).

A trade-off function f maps a false-positive rate α of a test between the
outputs on neighbouring datasets to the smallest false-negative rate β any test
with that α can reach. A mechanism is f-DP when every attack's (α, β) lies on
or above f, and, by symmetry of neighbouring, (1 - α, 1 - β) does too.

* ``tradeoff_gdp``: G_μ(α) = Φ(Φ⁻¹(1 - α) - μ), the Gaussian mechanism.
* ``tradeoff_eps_delta``: f_{ε,δ}(α) = max(0, 1 - δ - e^ε α, e^{-ε}(1 - δ - α))
  (Tight Auditing Eq. 4).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special  # Φ and Φ⁻¹ without importing scipy.stats

from .._core.validation import as_real_array, check_positive

__all__ = ["tradeoff_eps_delta", "tradeoff_gdp"]


def _as_rates(alpha: ArrayLike) -> NDArray[np.float64]:
    rates = as_real_array(alpha, "alpha")
    if np.any(~np.isfinite(rates)) or np.any((rates < 0) | (rates > 1)):
        raise ValueError(f"`alpha` must be in [0, 1], got {alpha!r}")
    return rates


def _unwrap(array: NDArray[np.float64]) -> NDArray[np.float64] | float:
    return array if array.ndim else float(array)


def tradeoff_gdp(alpha: ArrayLike, mu: float) -> NDArray[np.float64] | float:
    """G_μ(α) = Φ(Φ⁻¹(1 - α) - μ): the trade-off function of μ-GDP.

    Examples
    --------
    >>> round(tradeoff_gdp(0.05, 1.0), 4)  # Φ(1.6449 - 1)
    0.7405
    >>> tradeoff_gdp([0.0, 1.0], 2.0).tolist()
    [1.0, 0.0]
    """
    mu = check_positive(mu, "mu", allow_zero=True)
    rates = _as_rates(alpha)
    return _unwrap(special.ndtr(-special.ndtri(rates) - mu))


def tradeoff_eps_delta(alpha: ArrayLike, epsilon: float, delta: float) -> NDArray[np.float64] | float:
    """f_{ε,δ}(α) = max(0, 1 - δ - e^ε α, e^{-ε}(1 - δ - α)) (Tight Auditing Eq. 4).

    Examples
    --------
    >>> round(tradeoff_eps_delta(0.1, 1.0, 1e-5), 4)  # max(0, 1 - 1e-5 - 0.2718, 0.3311)
    0.7282
    >>> tradeoff_eps_delta(0.0, 0.0, 0.0)
    1.0
    """
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    delta = check_positive(delta, "delta", allow_zero=True)
    if delta >= 1.0:
        raise ValueError(f"`delta` must be in [0, 1), got {delta:g}")
    rates = _as_rates(alpha)
    return _unwrap(_eps_delta_curve(rates, epsilon, delta))


def _eps_delta_curve(alpha: NDArray[np.float64], epsilon: float | NDArray[np.float64], delta: float) -> NDArray[np.float64]:
    with np.errstate(over="ignore", divide="ignore"):  # e^ε α in logs: α = 0 gives 0, huge ε gives inf, never nan
        first = 1.0 - delta - np.exp(epsilon + np.log(alpha))
        second = np.exp(-epsilon) * (1.0 - delta - alpha)
    return cast("NDArray[np.float64]", np.maximum(0.0, np.maximum(first, second)))
