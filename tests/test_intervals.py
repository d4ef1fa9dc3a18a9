"""Binomial bounds: scipy's exact interval as oracle, and exact (not simulated) coverage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit.stats.intervals import binomial_interval, binomial_lower_bound, binomial_upper_bound


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (0, 1000), (17, 1000), (999, 1000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    exact = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    # a one-sided 95% bound is one end of the two-sided 90% exact interval
    assert binomial_upper_bound(k, n, confidence=0.95) == pytest.approx(exact.high, rel=1e-10)
    assert binomial_lower_bound(k, n, confidence=0.95) == pytest.approx(exact.low, rel=1e-10, abs=1e-15)
    low, high = binomial_interval(k, n, confidence=0.9)
    assert (low, high) == pytest.approx((exact.low, exact.high), rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("n", [5, 40, 200])
def test_clopper_pearson_upper_bound_covers_for_every_p(n):
    # exact coverage: P_p(upper(K) >= p) summed over the binomial pmf, on a fine grid of p
    k = np.arange(n + 1)
    upper = binomial_upper_bound(k, n, confidence=0.95)
    for p in np.linspace(0.001, 0.999, 500):
        coverage = stats.binom.pmf(k, n, p)[upper >= p].sum()
        assert coverage >= 0.95 - 1e-12


def test_jeffreys_is_inside_clopper_pearson_and_centred():
    k, n = np.arange(0, 51), 50
    assert np.all(binomial_upper_bound(k, n, method="jeffreys") <= binomial_upper_bound(k, n) + 1e-12)
    assert np.all(binomial_lower_bound(k, n, method="jeffreys") >= binomial_lower_bound(k, n) - 1e-12)
    # Jeffreys' average coverage over p is close to nominal (Brown, Cai and DasGupta 2001)
    upper = binomial_upper_bound(k, n, method="jeffreys")
    coverages = [stats.binom.pmf(k, n, p)[upper >= p].sum() for p in np.linspace(0.01, 0.99, 99)]
    assert np.mean(coverages) == pytest.approx(0.95, abs=0.01)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(successes=3, trials=2), "`successes` must be <= `trials`"),
        (dict(successes=-1, trials=2), "`successes`"),
        (dict(successes=1.5, trials=2), "`successes`"),
        (dict(successes=0, trials=0), "`trials`"),
        (dict(successes=1, trials=2, confidence=1.0), "`confidence`"),
        (dict(successes=1, trials=2, method="wilson"), "`method`"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        binomial_upper_bound(**kwargs)
