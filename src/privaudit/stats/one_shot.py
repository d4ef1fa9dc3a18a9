"""One-shot privacy estimation with random canaries (Andrew et al., One-shot §3–5).

Canaries drawn uniformly from the unit sphere of R^d are inserted into
training; the statistic is the cosine between each canary and the released
model (or model delta). For a canary that was *not* inserted, Theorem 3.1
gives the exact law: (1 + cos)/2 ~ Beta((d - 1)/2, (d - 1)/2), close to
N(0, 1/d) (Theorem 3.2).

* ``epsilon_two_gaussians``: the optimal ε(δ) between two Gaussians of any
  variances, through the privacy-loss random variable (§3.2), in logs.
* ``epsilon_one_shot``: the paper's *estimate* ε_est: fit a Gaussian to the
  inserted canaries' cosines and compare it with the null (Algorithms 1–3).
* ``epsilon_lower_bound_cosines``: ε_lo (§5.1): a threshold attack with the
  FNR bounded from above and the FPR read off the exact null CDF.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import optimize, stats

from ._result import Result
from ._validation import as_scores, check_choice, check_count, check_positive, check_probability, check_real
from .intervals import BINOMIAL_METHODS, _upper

__all__ = [
    "CosineLowerBound",
    "OneShotEstimate",
    "epsilon_lower_bound_cosines",
    "epsilon_one_shot",
    "epsilon_two_gaussians",
    "null_cosine_logsf",
]

_MAX_EPSILON = 1e4


def _log_between(z1: float, z2: float) -> float:
    """log P(z1 < Z < z2) for standard normal Z, without cancellation."""
    if z2 <= z1:
        return -np.inf
    if z2 <= 0.0:
        high, low = stats.norm.logcdf(z2), stats.norm.logcdf(z1)
        return float(high + np.log1p(-np.exp(low - high)))
    if z1 >= 0.0:
        high, low = stats.norm.logsf(z1), stats.norm.logsf(z2)
        return float(high + np.log1p(-np.exp(low - high)))
    return float(np.log1p(-(stats.norm.cdf(z1) + stats.norm.sf(z2))))


def _log_prob(region, mu: float, sigma: float) -> float:
    """log P(X in region) for X ~ N(mu, sigma²); region is a list of (low, high) intervals."""
    terms = [_log_between((low - mu) / sigma, (high - mu) / sigma) for low, high in region]
    return float(np.logaddexp.reduce(terms)) if terms else -np.inf


def _loss_region(epsilon, mu_p, sigma_p, mu_q, sigma_q):
    """The set {x : log p(x)/q(x) > ε} as disjoint intervals."""
    a = 0.5 / sigma_q**2 - 0.5 / sigma_p**2
    b = mu_p / sigma_p**2 - mu_q / sigma_q**2
    c = 0.5 * mu_q**2 / sigma_q**2 - 0.5 * mu_p**2 / sigma_p**2 + np.log(sigma_q / sigma_p) - epsilon
    if a == 0.0:
        if b == 0.0:
            return [(-np.inf, np.inf)] if c > 0 else []
        root = -c / b
        return [(root, np.inf)] if b > 0 else [(-np.inf, root)]
    discriminant = b * b - 4 * a * c
    if discriminant <= 0.0:
        return [(-np.inf, np.inf)] if a > 0 else []
    sqrt_disc = np.sqrt(discriminant)
    q = -0.5 * (b + np.copysign(sqrt_disc, b))  # stable roots
    roots = sorted([q / a, c / q] if q != 0.0 else [-sqrt_disc / (2 * a), sqrt_disc / (2 * a)])
    if a > 0:
        return [(-np.inf, roots[0]), (roots[1], np.inf)]
    return [(roots[0], roots[1])]


def _log_hockey_stick(epsilon, mu_p, sigma_p, mu_q, sigma_q) -> float:
    """log δ(ε) = log(P(L > ε) - e^ε Q(L > ε)), L the privacy loss of P against Q."""
    region = _loss_region(epsilon, mu_p, sigma_p, mu_q, sigma_q)
    log_p = _log_prob(region, mu_p, sigma_p)
    if not np.isfinite(log_p):
        return -np.inf
    log_q = _log_prob(region, mu_q, sigma_q)
    ratio = min(epsilon + log_q - log_p, 0.0)  # <= 0 on the region; clip rounding
    return float(log_p + np.log(-np.expm1(ratio))) if ratio < 0 else -np.inf


def _epsilon_for_delta(log_delta, mu_p, sigma_p, mu_q, sigma_q) -> float:
    def gap(epsilon):
        return _log_hockey_stick(epsilon, mu_p, sigma_p, mu_q, sigma_q) - log_delta

    if gap(0.0) <= 0.0:
        return 0.0
    high = 1.0
    while gap(high) > 0.0:
        high *= 2.0
        if high > _MAX_EPSILON:
            return np.inf
    return float(optimize.brentq(gap, 0.0, high, xtol=1e-12, rtol=1e-12))


def epsilon_two_gaussians(mu0, sigma0, mu1, sigma1, *, delta) -> float:
    """Optimal ε(δ) distinguishing N(mu0, sigma0²) from N(mu1, sigma1²), both ways (One-shot §3.2).

    For each order (P, Q) the smallest ε with P(L > ε) - e^ε Q(L > ε) <= δ is
    found by a bracketed root search on log δ(ε); the larger of the two is
    returned, since DP must hold for both neighbours.

    With equal variances it is the Gaussian mechanism, μ-GDP with μ = |mu1 - mu0|/σ:

    >>> from privaudit.stats.conversions import gdp_epsilon
    >>> round(epsilon_two_gaussians(0.0, 1.0, 1.0, 1.0, delta=1e-5), 6) == round(gdp_epsilon(1.0, 1e-5), 6)
    True
    >>> round(epsilon_two_gaussians(0.0, 1.0, 1.0, 1.5, delta=1e-5), 2)  # unequal variances: the tail dominates
    17.09
    """
    mu0, mu1 = check_real(mu0, "mu0"), check_real(mu1, "mu1")
    sigma0, sigma1 = check_positive(sigma0, "sigma0"), check_positive(sigma1, "sigma1")
    delta = check_probability(delta, "delta")
    log_delta = np.log(delta)
    return max(
        _epsilon_for_delta(log_delta, mu0, sigma0, mu1, sigma1),
        _epsilon_for_delta(log_delta, mu1, sigma1, mu0, sigma0),
    )


@dataclasses.dataclass(frozen=True)
class OneShotEstimate(Result):
    """One-shot ε estimate (ε_est): Gaussian fits of observed and null cosines."""

    epsilon: float
    delta: float
    observed_mean: float
    observed_std: float
    null_mean: float
    null_std: float
    num_canaries: int
    null: str
    dimension: int | None
    equal_variance: bool
    kind: str = "estimate"


def epsilon_one_shot(canary_cosines, *, delta, dimension=None, null_cosines=None, equal_variance=False) -> OneShotEstimate:
    """The one-shot estimate ε_est (One-shot Algorithms 1–3).

    Fits N(μ̂, σ̂²) to the cosines of inserted canaries (σ̂ with divisor k, as
    the paper) and compares it with the null: N(0, 1/d) from ``dimension``
    (final model, Algorithm 2) or a Gaussian fitted to ``null_cosines`` of
    canaries that were never inserted (Algorithm 3). Give exactly one.

    With the fitted σ̂ (the default, as the algorithms are written) sampling
    noise in σ̂ makes the tails differ, which raises ε at small δ: with
    k = 1000 and δ = 1e-6 the estimate of a true ε = 1 averages about 1.37.
    ``equal_variance=True`` uses the null's variance for both, so only the
    mean shift counts (the Gaussian mechanism's case); it reproduces the
    means and spreads of One-shot Table 2.

    >>> rng = np.random.default_rng(0)
    >>> d, sigma = 10**6, 1.54  # One-shot Table 2: σ = 1.54 gives ε = 3 at δ = 1e-6
    >>> cosines = rng.normal(1 / (sigma * np.sqrt(d)), 1 / np.sqrt(d), 1000)
    >>> result = epsilon_one_shot(cosines, dimension=d, delta=1e-6, equal_variance=True)
    >>> result.kind, bool(2.6 < result.epsilon < 3.4)
    ('estimate', True)
    """
    observed = as_scores(canary_cosines, "canary_cosines", min_size=2)
    delta = check_probability(delta, "delta")
    if (dimension is None) == (null_cosines is None):
        raise ValueError("exactly one of `dimension` and `null_cosines` must be given")
    if dimension is not None:
        dimension = check_count(dimension, "dimension", minimum=2)
        null_mean, null_std, null = 0.0, 1.0 / np.sqrt(dimension), "N(0, 1/d)"
    else:
        null_values = as_scores(null_cosines, "null_cosines", min_size=2)
        null_mean, null_std, null = float(null_values.mean()), float(null_values.std()), "fitted to null_cosines"
        if null_std == 0.0:
            raise ValueError("`null_cosines` must not all be equal")
    observed_std = float(observed.std())
    if observed_std == 0.0:
        raise ValueError("`canary_cosines` must not all be equal")
    compared_std = null_std if equal_variance else observed_std
    epsilon = epsilon_two_gaussians(null_mean, null_std, float(observed.mean()), compared_std, delta=delta)
    return OneShotEstimate(
        epsilon=epsilon,
        delta=delta,
        observed_mean=float(observed.mean()),
        observed_std=observed_std,
        null_mean=null_mean,
        null_std=null_std,
        num_canaries=observed.size,
        null=null,
        dimension=dimension,
        equal_variance=bool(equal_variance),
    )


def null_cosine_logsf(threshold, dimension: int):
    """log P(cos > t) for a uniform random unit vector in R^d (One-shot Theorem 3.1).

    >>> round(float(np.exp(null_cosine_logsf(0.0, 100))), 12)  # symmetric law
    0.5
    """
    half = (dimension - 1) / 2.0
    return stats.beta.logsf((1.0 + np.asarray(threshold, dtype=np.float64)) / 2.0, half, half)


@dataclasses.dataclass(frozen=True)
class CosineLowerBound(Result):
    """ε_lo from canary cosines: the best of Bonferroni-corrected threshold tests."""

    epsilon: float
    delta: float
    confidence: float
    interval: str
    threshold: float
    fnr_upper: float
    fpr: float
    num_canaries: int
    num_thresholds: int
    dimension: int
    kind: str


def epsilon_lower_bound_cosines(
    canary_cosines, *, dimension, delta, confidence=0.95, interval="jeffreys", num_thresholds=16
) -> CosineLowerBound:
    """The one-shot lower bound ε_lo (One-shot §5.1), valid across thresholds.

    The attack calls a canary "inserted" when its cosine is >= t. Its FPR is
    exact, from the null law of Theorem 3.1; its FNR is bounded from above
    with a Jeffreys interval (the paper's choice; approximate) or
    Clopper–Pearson (exact). ε then follows the (ε, δ) privacy region (Tight
    Auditing Eq. 9).

    The paper does not say how t is chosen. Taking the best t on the same
    cosines would be optimistic, so the thresholds are the order statistics
    X_(j) of the k canary cosines at ``num_thresholds`` ranks j fixed in
    advance (spaced geometrically from 1 to k), each tested at confidence
    1 - (1 - c)/``num_thresholds``. At t = X_(j) the true FNR is
    F(X_(j)) ~ Beta(j, k - j + 1), which the Clopper–Pearson bound at j - 1
    misses inverts exactly, so the Clopper–Pearson version is a valid bound.

    >>> rng = np.random.default_rng(0)
    >>> d = 10**4
    >>> cosines = rng.normal(3 / np.sqrt(d), 1 / np.sqrt(d), 1000)  # ~ 3-GDP: ε(1e-5) ≈ 14.4
    >>> result = epsilon_lower_bound_cosines(cosines, dimension=d, delta=1e-5)
    >>> result.kind, bool(1.0 < result.epsilon < 14.4)
    ('approximate lower bound', True)
    """
    cosines = as_scores(canary_cosines, "canary_cosines")
    if np.any(np.abs(cosines) > 1.0):
        raise ValueError("`canary_cosines` must lie in [-1, 1]")
    dimension = check_count(dimension, "dimension", minimum=2)
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    interval = check_choice(interval, "interval", BINOMIAL_METHODS)
    k = cosines.size
    num_thresholds = check_count(num_thresholds, "num_thresholds", minimum=1)

    ranks = np.unique(np.geomspace(1, k, min(num_thresholds, k)).round().astype(np.int64))
    thresholds = np.sort(cosines)[ranks - 1]
    level = 1.0 - (1.0 - confidence) / ranks.size
    fnr_upper = _upper(ranks - 1, np.full(ranks.shape, k), level, interval)
    log_fpr = null_cosine_logsf(thresholds, dimension)
    with np.errstate(divide="ignore"):
        log_fnr = np.log(fnr_upper)
        fpr = np.exp(log_fpr)
        first = np.log1p(np.clip(-delta - fpr, -1.0, 0.0)) - log_fnr
        second = np.log1p(np.clip(-delta - fnr_upper, -1.0, 0.0)) - log_fpr
    candidates = np.nan_to_num(np.maximum(first, second), nan=-np.inf)
    best = int(np.argmax(candidates))
    return CosineLowerBound(
        epsilon=max(0.0, float(candidates[best])),
        delta=delta,
        confidence=confidence,
        interval=interval,
        threshold=float(thresholds[best]),
        fnr_upper=float(fnr_upper[best]),
        fpr=float(fpr[best]),
        num_canaries=k,
        num_thresholds=int(ranks.size),
        dimension=dimension,
        kind="lower bound" if interval == "clopper-pearson" else "approximate lower bound",
    )
