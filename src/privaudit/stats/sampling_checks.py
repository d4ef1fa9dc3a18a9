"""Is what a loop drew consistent with Poisson sampling at rate q? Exact, conservative p-values.

Under Poisson sampling each of N records enters each step independently
with probability q, so:

* the batch sizes are iid Binomial(N, q); fixed-size (shuffled) batches put
  far more steps on one size than a binomial can;
* the total of the batch sizes over T steps is Binomial(N·T, q); a sampler at
  another rate moves it;
* each record's count over T steps is Binomial(T, q), independently across
  records; shuffling puts every record on the same count (once per epoch),
  a weighted sampler puts some records far above it.

Each function returns a p-value that is exact or larger (a union bound),
so a test at level α rejects a correct Poisson loop with probability ≤ α.

>>> import numpy as np
>>> round(tied_values_pvalue([64] * 20, n=1797, p=64 / 1797), 12)  # 20 steps of exactly 64
0.0
>>> rng = np.random.default_rng(0)
>>> tied_values_pvalue(rng.binomial(1797, 64 / 1797, size=140), n=1797, p=64 / 1797) > 0.01
True
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .._core.validation import check_count, check_probability

__all__ = ["binomial_total_pvalue", "largest_cosine_pvalue", "largest_count_pvalue", "tied_values_pvalue"]


def _check(n: int, p: float) -> tuple[int, float]:
    return check_count(n, "n", minimum=1), check_probability(p, "p")


def tied_values_pvalue(values: ArrayLike, *, n: int, p: float, exclude_zero: bool = True) -> float:
    """P(some value occurs at least as often as the most frequent one in ``values``), for iid Binomial(n, p) draws; an upper bound.

    The most frequent value occurring m times has P(max_v count_v ≥ m) ≤
    Σ_v P(Binomial(len, pmf(v)) ≥ m) (a union bound over the values). With
    ``exclude_zero`` zeros are dropped and the draws are taken from the
    zero-truncated binomial: a loop that skips empty batches stays covered.
    """
    n, p = _check(n, p)
    draws = np.asarray(values, dtype=np.int64).ravel()
    support = np.arange(n + 1)
    pmf = stats.binom.pmf(support, n, p)
    if exclude_zero:
        draws, pmf, support = draws[draws != 0], pmf[1:] / max(1.0 - pmf[0], 1e-300), support[1:]
    if len(draws) < 2:
        return 1.0
    _, counts = np.unique(draws, return_counts=True)
    most = int(counts.max())
    keep = pmf > 0
    tails = stats.binom.sf(most - 1, len(draws), np.minimum(pmf[keep], 1.0))
    return float(min(1.0, tails.sum()))


def binomial_total_pvalue(total: int, *, n: int, p: float) -> float:
    """Two-sided exact p-value of ``total`` draws out of ``n`` at rate ``p`` (scipy's binomtest): is the observed rate p?"""
    n, p = _check(n, p)
    total = check_count(total, "total", maximum=n)
    return float(stats.binomtest(total, n, p).pvalue)


def largest_count_pvalue(counts: ArrayLike, *, trials: int, p: float) -> float:
    """P(the largest of len(counts) iid Binomial(trials, p) counts reaches max(counts)) ≤ len · P(Binomial(trials, p) ≥ max); an upper bound."""
    trials, p = _check(trials, p)
    counts = np.asarray(counts, dtype=np.int64).ravel()
    if not len(counts):
        return 1.0
    return float(min(1.0, len(counts) * stats.binom.sf(int(counts.max()) - 1, trials, p)))


def largest_cosine_pvalue(vectors: ArrayLike, *, block: int = 1024) -> tuple[float, float, tuple[int, int]]:
    """(p-value, largest |cosine|, the pair) over every pair of rows of ``vectors``, against independent isotropic Gaussian rows.

    Two independent isotropic Gaussian vectors of length m have cos² ~
    Beta(1/2, (m − 1)/2) (the squared first coordinate of a uniform point on
    the sphere), whatever their scale; the p-value is that tail at the
    largest cos² over all pairs, times the number of pairs (a union bound).
    Rows are compared ``block`` at a time, so memory stays O(block · rows).

    >>> rng = np.random.default_rng(0)
    >>> rows = rng.normal(size=(5, 8))
    >>> rows[4] = -3.0 * rows[1]
    >>> p, largest, pair = largest_cosine_pvalue(rows)
    >>> p, round(largest, 6), pair
    (0.0, 1.0, (1, 4))
    """
    steps = np.asarray(vectors, dtype=np.float64)
    count, length = steps.shape
    if count < 2 or length < 2:
        raise ValueError(f"`vectors` must have at least 2 rows of length >= 2, got shape {steps.shape}")
    unit = steps / np.maximum(np.linalg.norm(steps, axis=1, keepdims=True), np.finfo(np.float64).tiny)
    largest, pair = -1.0, (0, 1)
    for start in range(0, count - 1, block):
        cosines = np.abs(unit[start : start + block] @ unit.T)
        cosines[np.tril_indices(cosines.shape[0], k=start, m=count)] = -1.0  # each pair once, no row with itself
        at = np.unravel_index(int(np.argmax(cosines)), cosines.shape)
        if cosines[at] > largest:
            largest, pair = float(cosines[at]), (start + int(at[0]), int(at[1]))
    pairs = count * (count - 1) / 2
    return float(min(1.0, pairs * stats.beta.sf(min(largest, 1.0) ** 2, 0.5, (length - 1) / 2))), largest, pair
