"""A Gaussian one-run lower bound for white-box canaries, in the spirit of "Let's Ask Gauss" (Agrawal et al. 2026).

In a white-box DP-SGD audit each canary i has one observation y_i: the sum,
over the training run, of the released update along the canary's own
direction (its audit coordinate). Canary i is included (s_i = 1) or not for
the whole run, by a fair coin drawn once. The added noise is Gaussian and
independent of the canaries, so

    y_i = a · s_i + b + τ Z_i,   Z_i ~ N(0, 1) independent,

and releasing y_i is exactly (a/τ)-GDP with respect to canary i. Instead of
thresholding each y_i into a guess, the bound reads μ = a/τ from all the
observations at once: the two-sample t statistic of the included against
the excluded canaries follows a noncentral t law with n₁ + n₀ - 2 degrees
of freedom and noncentrality μ / √(1/n₁ + 1/n₀), whatever a, b and τ are.
Inverting its upper tail at significance 1 - c gives a lower confidence
bound on μ that is *exact* for Gaussian observations (conditionally on the
inclusion draw, hence unconditionally), reported as ε(δ) of μ-GDP. Any
mechanism whose release for canary i is μ'-GDP with μ' < μ would be told
apart from the observed one, so ε(δ) of the bound is a lower bound on the
mechanism's.

When the per-step noise is not Gaussian but each y_i sums many independent
steps, the t statistic is Gaussian only in the limit (the central limit
theorem), and the result says so: ``exact=False``, ``kind="approximate
lower bound"``.

Scores of a black-box attack (losses, confidences) are not Gaussian with a
shared variance, and this bound does not apply to them: use
:func:`~privaudit.stats.one_run_fdp.epsilon_one_run_fdp` there.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._core.results import Result
from .._core.validation import as_scores, check_probability
from .conversions import gdp_epsilon
from .one_run import check_members
from .roots import brentq  # scipy.optimize's brentq, without its import time

__all__ = ["OneRunGaussianBound", "epsilon_one_run_gaussian"]

_MAX_NONCENTRALITY = 1e6


@dataclasses.dataclass(frozen=True)
class OneRunGaussianBound(Result):
    """Lower bound on μ (and ε(δ) of μ-GDP) from one run's summed white-box observations."""

    epsilon: float
    delta: float
    confidence: float
    mu: float
    t_statistic: float
    degrees_of_freedom: int
    num_in: int
    num_out: int
    exact: bool
    kind: str
    valid: bool = True


def _noncentrality_lower_bound(t_statistic: float, dof: int, level: float) -> float:
    """Smallest noncentrality whose upper tail at ``t_statistic`` reaches ``level`` (0 if the central one does)."""
    from scipy import stats  # imported where used: scipy.stats alone takes a third of a second

    def gap(noncentrality: float) -> float:
        return float(stats.nct.sf(t_statistic, dof, noncentrality)) - level

    if gap(0.0) >= 0.0:
        return 0.0
    high = max(1.0, t_statistic)
    while gap(high) < 0.0:
        if high >= _MAX_NONCENTRALITY:
            return _MAX_NONCENTRALITY
        high *= 2.0
    # the smaller end of the bracket: the tail there is still below the level, so it is rejected
    low = brentq(gap, 0.0, high, xtol=1e-10)
    return max(0.0, float(low) - 2e-10)


def epsilon_one_run_gaussian(observations: Any, is_member: Any, *, delta: Any, confidence: Any = 0.95, gaussian_noise: bool = True) -> OneRunGaussianBound:
    """Lower-bound μ, then ε(δ), from white-box canary observations of one training run.

    Parameters
    ----------
    observations : 1-D array
        One summed, canary-aligned observation per canary (higher = more
        likely included).
    is_member : 1-D array of bool
        Which canaries were included, at least 2 on each side.
    delta : float in (0, 1)
    confidence : float in (0, 1)
    gaussian_noise : bool
        True when the mechanism's noise is Gaussian (DP-SGD): the bound is
        exact. False when only the sums are Gaussian in the limit: the bound
        is asymptotic and labelled so.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(2000) < 0.5
    >>> result = epsilon_one_run_gaussian(1.0 * member + rng.normal(size=2000), member, delta=1e-5)
    >>> round(result.mu, 2), result.kind
    (0.98, 'lower bound')
    """
    values = as_scores(observations, "observations")
    member = check_members(is_member, values.shape, min_per_side=2)
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    if not isinstance(gaussian_noise, (bool, np.bool_)):
        raise ValueError(f"`gaussian_noise` must be True or False, got {gaussian_noise!r}")
    inside, outside = values[member], values[~member]
    n1, n0 = inside.size, outside.size
    dof = n1 + n0 - 2
    spread = float(np.sqrt(((n1 - 1) * inside.var(ddof=1) + (n0 - 1) * outside.var(ddof=1)) / dof))
    scale = math.sqrt(1.0 / n1 + 1.0 / n0)
    difference = float(inside.mean() - outside.mean())
    if spread == 0.0:  # no noise at all: any difference is infinitely distinguishable
        t_statistic = math.inf if difference > 0 else (0.0 if difference == 0 else -math.inf)
    else:
        t_statistic = difference / (spread * scale)
    if t_statistic == math.inf:
        mu = _MAX_NONCENTRALITY * scale
    elif t_statistic <= 0.0:
        mu = 0.0
    else:
        mu = _noncentrality_lower_bound(t_statistic, dof, 1.0 - confidence) * scale
    return OneRunGaussianBound(
        epsilon=float(gdp_epsilon(mu, delta)) if mu > 0 else 0.0,
        delta=delta,
        confidence=confidence,
        mu=mu,
        t_statistic=t_statistic,
        degrees_of_freedom=dof,
        num_in=n1,
        num_out=n0,
        exact=bool(gaussian_noise),
        kind="lower bound" if gaussian_noise else "approximate lower bound",
    )
