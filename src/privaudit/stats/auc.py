"""A rank-based GDP lower bound: the AUC of every test of a μ-GDP mechanism is at most Φ(μ/√2).

If a mechanism is μ-GDP, every test between its outputs on neighbouring
inputs has type II error β(α) >= G_μ(α) = Φ(Φ⁻¹(1 - α) - μ) at type I error
α (Dong, Roth & Su, 2019; Tight Auditing Eq. 12). The area under the ROC
curve of any score is ∫(1 - β(α)) dα, so

    AUC <= 1 - ∫₀¹ G_μ(α) dα = 1 - P(Z - Z' >= μ) = Φ(μ/√2),

with Z, Z' independent standard normals. A lower confidence bound on the AUC
therefore gives one on μ, μ >= √2 Φ⁻¹(AUC_lo), and on ε(δ) through the GDP
conversion. Ties count ½ (the AUC of a randomised threshold), which the
trade-off bound covers too.

Why use it: a threshold bound (:func:`~privaudit.stats.bounds.epsilon_lower_bound`)
reads one ROC point: on two Gaussians a single threshold has asymptotic
efficiency 2/π ≈ 0.64 relative to the mean difference, the Mann–Whitney
statistic 3/π ≈ 0.95. For weak leakage (small μ) with a fixed number of
canary observations, the rank bound is markedly tighter: at ε = 1
(μ = 0.268), δ = 1e-5, and 10⁴ canary observations it is 0.93 ε on average
over 100 seeds, against 0.89 ε for the threshold bound fixed in advance
(benchmarks/dpsgd_validity.py).

What it is not: the interval is asymptotic, so the bound is *approximate*
(``kind="approximate lower bound"``), like the Jeffreys interval. For an
exact bound at every sample size, use the Clopper–Pearson threshold bound.
The lower AUC limit is the smaller of two normal-theory limits:

* DeLong's interval on the logit of the AUC, with the distribution-free
  variance estimated from the placement values (Wald-type);
* a score-type limit: the smallest A whose binormal variance, the variance
  of the AUC of two unit Gaussians with AUC A (the GDP family itself),
  still puts the observed AUC within z standard errors (Wilson-style).

Near AUC = 1 the Wald-type limit alone covers too rarely (8–9% exceedances
of a 95% bound at μ = 3–4 with 100 observations a side), because a high
observed AUC comes with a small estimated variance; the score-type limit
evaluates the variance at the candidate instead, and the smaller of the two
covers at every μ and sample size in the Monte Carlo tests (30 and 100
observations a side, 10³ against 10⁴, μ from 0 to 4, and discrete scores
with ties). When
the samples are perfectly separated (DeLong's variance is 0) the first limit
uses the maximum variance A(1 - A)/min(m, n) (Birnbaum & Klose, 1957)
instead. The bound assumes independent observations, as every bound of this
package does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import special  # not scipy.stats or scipy.optimize: `privaudit bound` imports this module, and they cost a tenth of a second

from .._core.results import Result
from .._core.validation import as_scores, check_probability
from .conversions import gdp_epsilon
from .roots import brentq

__all__ = ["AUCInterval", "GDPAUCLowerBound", "auc_interval", "gdp_auc_lower_bound"]


@dataclasses.dataclass(frozen=True)
class GDPAUCLowerBound(Result):
    """A GDP lower bound on μ and ε(δ) from the AUC of in/out scores.

    ``auc`` is the empirical AUC, ``auc_lower`` its lower confidence limit
    and ``auc_standard_error`` DeLong's standard error. ``parameter`` is the
    bound on μ. ``interval`` names the limit that was the smaller:
    "delong-logit", "binormal-score", or "max-variance" (perfectly separated
    samples).
    """

    epsilon: float
    delta: float
    confidence: float
    method: str
    interval: str
    kind: str
    valid: bool
    parameter_name: str
    parameter: float
    auc: float
    auc_lower: float
    auc_standard_error: float
    num_in: int
    num_out: int


def _placements(in_scores: np.ndarray, out_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values: for each in-score the share of out-scores below it, and vice versa (ties ½)."""
    in_sorted, out_sorted = np.sort(in_scores), np.sort(out_scores)
    below = np.searchsorted(out_sorted, in_scores, side="left")
    at_or_below = np.searchsorted(out_sorted, in_scores, side="right")
    in_placements = (below + at_or_below) / (2.0 * out_scores.size)
    above = in_scores.size - np.searchsorted(in_sorted, out_scores, side="right")
    at_or_above = in_scores.size - np.searchsorted(in_sorted, out_scores, side="left")
    out_placements = (above + at_or_above) / (2.0 * in_scores.size)
    return in_placements, out_placements


def _binormal_variance(auc: float, n_in: int, n_out: int) -> float:
    """Variance of the empirical AUC of N(d, 1) against N(0, 1) scores, d = √2 Φ⁻¹(auc).

    Both DeLong covariance terms are P(X > Y₁, X > Y₂) - A², a bivariate normal
    orthant probability with correlation ½: Φ(h) - 2 T(h, 1/√3), h = d/√2 (Owen's T).
    """
    h = special.ndtri(auc)  # Φ⁻¹, what scipy.stats.norm.ppf computes
    both = special.ndtr(h) - 2.0 * special.owens_t(h, 1.0 / np.sqrt(3.0))
    return float((auc * (1.0 - auc) + (n_in + n_out - 2) * (both - auc * auc)) / (n_in * n_out))


def _binormal_score_lower(auc: float, n_in: int, n_out: int, z: float) -> float:
    """Smallest A <= auc with auc - A <= z·sd(A), the standard deviation taken at A itself."""
    gap: Callable[[float], float] = lambda a: auc - a - z * np.sqrt(_binormal_variance(a, n_in, n_out))  # noqa: E731 - decreasing in a
    floor = 1e-12
    if auc <= floor or gap(floor) <= 0.0:
        return floor
    return brentq(gap, floor, auc, xtol=1e-14)


def _max_variance_lower(auc: float, size: int, z: float) -> float:
    """Smallest A with (auc - A)² <= z² A(1 - A)/size and A <= auc: the Wilson-style inversion."""
    a, b, c = 1.0 + z * z / size, -(2.0 * auc + z * z / size), auc * auc
    return float((-b - np.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a))


def gdp_auc_lower_bound(in_scores: ArrayLike, out_scores: ArrayLike, *, delta: float, confidence: float = 0.95) -> GDPAUCLowerBound:
    """Approximate lower bound on μ and ε(δ) of a GDP mechanism from the AUC of its observations.

    Parameters
    ----------
    in_scores, out_scores : 1-D arrays of finite numbers, at least 2 each
        Scores of observations with and without the target (higher means
        "in"). The orientation must be fixed before looking at the data.
    delta : float in (0, 1)
        The δ at which ε is reported.
    confidence : float in (0, 1)
        One-sided level of the lower bound.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> out_scores, in_scores = rng.normal(0, 1, 100_000), rng.normal(0.268, 1, 10_000)  # μ = 0.268: ε(1e-5) = 1
    >>> result = gdp_auc_lower_bound(in_scores, out_scores, delta=1e-5)
    >>> result.kind, bool(0.85 < result.epsilon < 1.0), round(result.auc, 3)  # population AUC: Φ(0.268/√2) = 0.575
    ('approximate lower bound', True, 0.573)
    >>> gdp_auc_lower_bound([1.0], [0.0, 1.0], delta=1e-5)
    Traceback (most recent call last):
    ...
    ValueError: `in_scores` must hold at least 2 value(s), got 1
    """
    in_scores = as_scores(in_scores, "in_scores", min_size=2)
    out_scores = as_scores(out_scores, "out_scores", min_size=2)
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    auc, standard_error, interval, auc_lower = _lower_limit(in_scores, out_scores, float(special.ndtri(confidence)))
    mu = max(0.0, float(np.sqrt(2.0) * special.ndtri(auc_lower)))
    return GDPAUCLowerBound(
        epsilon=float(gdp_epsilon(mu, delta)),
        delta=delta,
        confidence=confidence,
        method="gdp",
        interval=interval,
        kind="approximate lower bound",
        valid=True,
        parameter_name="mu",
        parameter=mu,
        auc=auc,
        auc_lower=auc_lower,
        auc_standard_error=standard_error,
        num_in=int(in_scores.size),
        num_out=int(out_scores.size),
    )


def _lower_limit(in_scores: np.ndarray, out_scores: np.ndarray, z: float) -> tuple[float, float, str, float]:
    """(AUC, DeLong's standard error, the limit that was smaller, the lower limit at ``z``): the smaller of the Wald and score limits."""
    in_placements, out_placements = _placements(in_scores, out_scores)
    auc = float(in_placements.mean())
    variance = in_placements.var(ddof=1) / in_scores.size + out_placements.var(ddof=1) / out_scores.size
    standard_error = float(np.sqrt(variance))
    if 0.0 < auc < 1.0 and standard_error > 0.0:
        wald = ("delong-logit", float(special.expit(special.logit(auc) - z * standard_error / (auc * (1.0 - auc)))))
    else:  # perfect separation (or all scores tied): DeLong's variance is 0, use its maximum
        wald = ("max-variance", _max_variance_lower(auc, min(in_scores.size, out_scores.size), z))
    score = ("binormal-score", _binormal_score_lower(auc, in_scores.size, out_scores.size, z))
    interval, auc_lower = min(wald, score, key=lambda pair: pair[1])
    return auc, standard_error, interval, auc_lower


@dataclasses.dataclass(frozen=True)
class AUCInterval(Result):
    """The empirical AUC with a two-sided ``confidence`` interval ``[low, high]`` (approximate, normal theory)."""

    auc: float
    low: float
    high: float
    confidence: float
    standard_error: float
    num_in: int
    num_out: int

    def excludes(self, value: float = 0.5) -> bool:
        """Whether ``value`` lies outside the interval: for ½, whether the scores tell in from out at this confidence."""
        return not self.low <= value <= self.high


def auc_interval(in_scores: ArrayLike, out_scores: ArrayLike, *, confidence: float = 0.95) -> AUCInterval:
    """Two-sided approximate ``confidence`` interval on the AUC of in/out scores, each side the lower limit of :func:`gdp_auc_lower_bound`.

    The low end is the one-sided limit at level (1 + c)/2; the high end is 1
    minus the same limit of the swapped scores (the AUC of out against in is
    1 - AUC), so each side misses with probability (1 - c)/2 at most in the
    Monte Carlo tests, ties and perfect separation included. It assumes
    independent scores. An interval that excludes ½ says the scores tell
    the two sets apart.

    >>> rng = np.random.default_rng(0)
    >>> result = auc_interval(rng.normal(1.0, 1, 300), rng.normal(0.0, 1, 300), confidence=0.99)  # population AUC Φ(1/√2) = 0.760
    >>> bool(result.low < 0.760 < result.high), result.excludes(0.5)
    (True, True)
    """
    in_scores = as_scores(in_scores, "in_scores", min_size=2)
    out_scores = as_scores(out_scores, "out_scores", min_size=2)
    confidence = check_probability(confidence, "confidence")
    z = float(special.ndtri((1.0 + confidence) / 2.0))
    auc, standard_error, _, low = _lower_limit(in_scores, out_scores, z)
    _, _, _, swapped_low = _lower_limit(out_scores, in_scores, z)
    return AUCInterval(
        auc=auc,
        low=low,
        high=1.0 - swapped_low,
        confidence=confidence,
        standard_error=standard_error,
        num_in=int(in_scores.size),
        num_out=int(out_scores.size),
    )
