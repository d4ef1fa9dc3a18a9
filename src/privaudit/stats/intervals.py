"""Binomial confidence bounds, vectorised over counts.

One-sided bounds are what audits need: an upper bound on an attack's error rate
turns into a lower bound on ε. Both methods take quantiles of the beta distribution

* ``"clopper-pearson"``: exact, coverage >= the stated confidence for every n.
* ``"jeffreys"``: the equal-tailed Jeffreys-prior interval; coverage is close
  to nominal on average but not guaranteed for every (n, p). The bounds are
  clamped to 1 (upper, k = n) and 0 (lower, k = 0), as Brown, Cai and DasGupta
  (2001) recommend.

Upper bounds use quantile ``confidence`` of the beta distribution, lower
bounds quantile ``1 - confidence``; a two-sided interval at confidence c puts
(1 - c)/2 in each tail.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._core.validation import check_choice, check_probability

__all__ = [
    "BINOMIAL_METHODS",
    "binomial_interval",
    "binomial_lower_bound",
    "binomial_upper_bound",
    "validate_counts",
]

BINOMIAL_METHODS = ("clopper-pearson", "jeffreys")
_MAX_COUNT = 2.0**62  # below int64's limit after float rounding
_Counts: TypeAlias = "NDArray[np.int64] | np.int64"


def validate_counts(
    successes: ArrayLike, trials: ArrayLike, *, successes_name: str = "successes", trials_name: str = "trials"
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Return (successes, trials) as int64 arrays with 0 <= successes <= trials, trials >= 1.

    >>> validate_counts(3, 10)
    (array(3), array(10))
    """
    try:
        k = np.asarray(successes)
        n = np.asarray(trials)
    except (TypeError, ValueError) as error:  # ragged nesting
        raise ValueError(f"`{successes_name}` and `{trials_name}` must be arrays of integer counts") from error
    for array, name in ((k, successes_name), (n, trials_name)):
        # complex, bool, object and string arrays are refused; so are counts beyond int64
        if array.dtype.kind not in "iuf":
            raise ValueError(f"`{name}` must be a non-negative integer count, got {array!r}")
        if np.any(~np.isfinite(array)) or np.any(array != np.round(array)) or np.any(array < 0) or np.any(array > _MAX_COUNT):
            raise ValueError(f"`{name}` must be a non-negative integer count (at most 2**62), got {array!r}")
    k = k.astype(np.int64)
    n = n.astype(np.int64)
    if np.any(n < 1):
        raise ValueError(f"`{trials_name}` must be >= 1, got {n!r}")
    if np.any(k > n):
        raise ValueError(f"`{successes_name}` must be <= `{trials_name}`, got {k!r} > {n!r}")
    return k, n


def _upper(k: _Counts, n: _Counts, level: float, method: str) -> NDArray[np.float64]:
    b: NDArray[np.number[Any]] | np.number[Any]
    if method == "clopper-pearson":
        a, b = k + 1.0, n - k
    else:
        a, b = k + 0.5, n - k + 0.5
    full = k >= n
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = special.betaincinv(a, np.where(full, 1.0, b), level)  # beta.ppf itself, without its per-call overhead
    return np.where(full, 1.0, bound)


def _lower(k: _Counts, n: _Counts, level: float, method: str) -> NDArray[np.float64]:
    # P(X >= k) symmetry: lower bound on p is 1 - upper bound on 1 - p.
    return 1.0 - _upper(n - k, n, level, method)


def binomial_upper_bound(successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95, method: str = "clopper-pearson") -> NDArray[np.float64]:
    """One-sided upper confidence bound on a binomial proportion.

    Parameters
    ----------
    successes, trials : int or array of int
        Observed counts, broadcast against each other.
    confidence : float in (0, 1)
        Probability that the bound covers the true proportion.
    method : {"clopper-pearson", "jeffreys"}

    Examples
    --------
    >>> float(binomial_upper_bound(0, 10, confidence=0.95))  # 1 - 0.05**(1/10)
    0.2588...
    >>> binomial_upper_bound([10, 5], 10).round(4)
    array([1.    , 0.7776])
    """
    confidence = check_probability(confidence, "confidence")
    method = check_choice(method, "method", BINOMIAL_METHODS)
    k, n = validate_counts(successes, trials)
    return _upper(k, n, confidence, method)


def binomial_lower_bound(successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95, method: str = "clopper-pearson") -> NDArray[np.float64]:
    """One-sided lower confidence bound on a binomial proportion.

    >>> float(binomial_lower_bound(10, 10, confidence=0.95))  # 0.05**(1/10)
    0.7411...
    >>> float(binomial_lower_bound(0, 10))
    0.0
    """
    confidence = check_probability(confidence, "confidence")
    method = check_choice(method, "method", BINOMIAL_METHODS)
    k, n = validate_counts(successes, trials)
    return _lower(k, n, confidence, method)


def binomial_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95, method: str = "clopper-pearson"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two-sided equal-tailed interval ``(low, high)`` on a binomial proportion.

    >>> low, high = binomial_interval(5, 10)
    >>> round(float(low), 4), round(float(high), 4)
    (0.1871, 0.8129)
    """
    confidence = check_probability(confidence, "confidence")
    method = check_choice(method, "method", BINOMIAL_METHODS)
    k, n = validate_counts(successes, trials)
    level = 1.0 - (1.0 - confidence) / 2.0
    return _lower(k, n, level, method), _upper(k, n, level, method)
