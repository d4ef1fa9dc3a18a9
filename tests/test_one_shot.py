"""One-shot estimation: hockey-stick integrals, the exact null law, Table 2, and ε_lo's validity."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import integrate, special, stats

from privaudit import (
    epsilon_lower_bound_cosines,
    epsilon_one_shot,
    epsilon_two_gaussians,
    gaussian_epsilon,
    gdp_epsilon,
    gdp_mu,
)
from privaudit.stats.one_shot import null_cosine_logsf

TRIALS = 500
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))


def hockey_stick_by_quad(epsilon, mu_p, sigma_p, mu_q, sigma_q):
    """∫ (p(x) - e^ε q(x))₊ dx by adaptive quadrature."""
    integrand = lambda x: max(stats.norm.pdf(x, mu_p, sigma_p) - np.exp(epsilon) * stats.norm.pdf(x, mu_q, sigma_q), 0.0)
    span = 40 * max(sigma_p, sigma_q)
    centre = (mu_p + mu_q) / 2
    points = np.linspace(centre - span / 4, centre + span / 4, 41)
    return integrate.quad(integrand, centre - span, centre + span, points=points, limit=1000, epsabs=1e-14)[0]


@pytest.mark.parametrize("params", [(0.0, 1.0, 1.0, 1.0), (0.0, 1.0, 1.0, 1.5), (0.0, 1.0, 0.5, 0.8), (2.0, 0.5, 0.0, 0.7), (0.0, 1.0, 3.0, 1.1)])
@pytest.mark.parametrize("delta", [1e-2, 1e-5])
def test_two_gaussians_solves_the_hockey_stick_equation(params, delta):
    epsilon = epsilon_two_gaussians(*params, delta=delta)
    m0, s0, m1, s1 = params
    both_ways = max(hockey_stick_by_quad(epsilon, m0, s0, m1, s1), hockey_stick_by_quad(epsilon, m1, s1, m0, s0))
    assert both_ways == pytest.approx(delta, rel=1e-4)


@pytest.mark.parametrize("mu", [0.1, 1.0, 5.0])
def test_equal_variances_reduce_to_gaussian_dp(mu):
    assert epsilon_two_gaussians(0.0, 2.0, 2 * mu, 2.0, delta=1e-6) == pytest.approx(gdp_epsilon(mu, 1e-6), rel=1e-8)


def test_two_gaussians_is_symmetric_and_monotone_in_delta():
    a = epsilon_two_gaussians(0.0, 1.0, 1.0, 1.3, delta=1e-5)
    assert epsilon_two_gaussians(1.0, 1.3, 0.0, 1.0, delta=1e-5) == pytest.approx(a)
    assert epsilon_two_gaussians(0.0, 1.0, 1.0, 1.3, delta=1e-3) < a
    assert epsilon_two_gaussians(0.0, 1.0, 0.0, 1.0, delta=1e-5) == 0.0
    assert np.isfinite(epsilon_two_gaussians(0.0, 1.0, 30.0, 1.0, delta=1e-10))


def test_null_law_matches_theorem_3_1_density_and_sampling():
    d = 50
    density = lambda t: np.exp(special.gammaln(d / 2) - special.gammaln((d - 1) / 2)) / np.sqrt(np.pi) * (1 - t * t) ** ((d - 3) / 2)
    for t in (-0.3, 0.0, 0.2, 0.5):
        tail = integrate.quad(density, t, 1.0)[0]
        assert np.exp(null_cosine_logsf(t, d)) == pytest.approx(tail, rel=1e-8)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(100_000, d))
    cosines = vectors[:, 0] / np.linalg.norm(vectors, axis=1)
    for t in (0.1, 0.3):
        p = np.exp(null_cosine_logsf(t, d))
        assert np.mean(cosines > t) == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / cosines.size))


# One-shot Table 2 (δ = 1e-6): σ from the optimal calibration, and ε_est over 50 simulations
TABLE_2 = [(4.22, 1.0, 0.972, 0.148), (1.54, 3.0, 3.04, 0.137), (0.541, 10.0, 9.98, 0.190)]


@pytest.mark.parametrize(("sigma", "epsilon", "estimate_mean", "estimate_std"), TABLE_2)
def test_table_2_sigma_to_epsilon(sigma, epsilon, estimate_mean, estimate_std):
    assert 1 / gdp_mu(epsilon, 1e-6) == pytest.approx(sigma, abs=0.005)
    assert gaussian_epsilon(sigma, 1e-6) == pytest.approx(epsilon, abs=0.02)


@pytest.mark.parametrize(("sigma", "epsilon", "estimate_mean", "estimate_std"), TABLE_2)
def test_table_2_one_shot_estimates(sigma, epsilon, estimate_mean, estimate_std):
    # d = 1e6, k = 1e3; Theorem 3.3: cosines ≈ N(1/(σ√d), 1/d)
    rng = np.random.default_rng(int(epsilon * 10))
    d, k = 10**6, 1000
    estimates = [
        epsilon_one_shot(rng.normal(1 / (sigma * np.sqrt(d)), 1 / np.sqrt(d), k), dimension=d, delta=1e-6, equal_variance=True).epsilon for _ in range(50)
    ]
    # the paper's mean ± std over 50 runs; the mean of 50 should be within 4 standard errors
    assert np.mean(estimates) == pytest.approx(estimate_mean, abs=4 * estimate_std / np.sqrt(50) + 0.03)
    assert np.std(estimates) == pytest.approx(estimate_std, rel=0.5)


def test_fitted_variance_estimate_is_upward_biased_at_small_delta():
    # the documented effect: noise in σ̂ fattens one tail, and δ = 1e-6 lives in the tail
    rng = np.random.default_rng(2)
    d, k, sigma = 10**6, 1000, 4.22
    fitted = [epsilon_one_shot(rng.normal(1 / (sigma * np.sqrt(d)), 1 / np.sqrt(d), k), dimension=d, delta=1e-6).epsilon for _ in range(50)]
    assert np.mean(fitted) > 1.1


def test_algorithm_1_with_real_random_canaries():
    rng = np.random.default_rng(1)
    d, k, sigma = 20_000, 100, 1.0
    canaries = rng.normal(size=(k, d))
    canaries /= np.linalg.norm(canaries, axis=1, keepdims=True)
    released = canaries.sum(axis=0) + sigma * rng.normal(size=d)
    cosines = canaries @ released / np.linalg.norm(released)
    assert np.sqrt(d) * cosines.mean() == pytest.approx(1 / np.sqrt(sigma**2 + k / d), abs=0.3)
    result = epsilon_one_shot(cosines, dimension=d, delta=1e-5, equal_variance=True)
    assert result.kind == "estimate" and result.epsilon == pytest.approx(gaussian_epsilon(sigma, 1e-5), rel=0.35)
    fitted_null = epsilon_one_shot(cosines, null_cosines=rng.normal(0, 1 / np.sqrt(d), 1000), delta=1e-5)
    assert fitted_null.null == "fitted to null_cosines"


@pytest.mark.parametrize("interval", ["clopper-pearson", "jeffreys"])
def test_cosine_lower_bound_coverage(interval):
    d, k, mu, delta = 10**6, 1000, 2.0, 1e-5
    true_epsilon = gdp_epsilon(mu, delta)
    rng = np.random.default_rng(11)
    exceed = sum(
        epsilon_lower_bound_cosines(rng.normal(mu / np.sqrt(d), 1 / np.sqrt(d), k), dimension=d, delta=delta, interval=interval).epsilon > true_epsilon
        for _ in range(TRIALS)
    )
    assert exceed <= ALLOWED


def test_cosine_lower_bound_is_zero_for_unobserved_canaries():
    d, k = 1000, 500
    rng = np.random.default_rng(12)
    half = (d - 1) / 2
    positives = sum(epsilon_lower_bound_cosines(2 * rng.beta(half, half, k) - 1, dimension=d, delta=1e-5).epsilon > 0 for _ in range(TRIALS))
    assert positives <= ALLOWED


def test_cosine_lower_bound_is_informative():
    rng = np.random.default_rng(13)
    d, mu = 10**6, 2.0
    result = epsilon_lower_bound_cosines(rng.normal(mu / np.sqrt(d), 1 / np.sqrt(d), 5000), dimension=d, delta=1e-5)
    # an (ε, δ)-region bound from 5000 canaries recovers about 40% of ε(δ) here (seeds 0–9: 0.37–0.47)
    assert 0.3 * gdp_epsilon(mu, 1e-5) < result.epsilon < gdp_epsilon(mu, 1e-5)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: epsilon_two_gaussians(0.0, 0.0, 1.0, 1.0, delta=1e-5), "`sigma0`"),
        (lambda: epsilon_two_gaussians(0.0, 1.0, np.nan, 1.0, delta=1e-5), "`mu1`"),
        (lambda: epsilon_two_gaussians(0.0, 1.0, 1.0, 1.0, delta=0.0), "`delta`"),
        (lambda: epsilon_one_shot([0.1, 0.2], delta=1e-5), "exactly one of"),
        (lambda: epsilon_one_shot([0.1, 0.2], dimension=1, delta=1e-5), "`dimension`"),
        (lambda: epsilon_one_shot([0.1], dimension=10, delta=1e-5), "`canary_cosines`"),
        (lambda: epsilon_lower_bound_cosines([1.5], dimension=10, delta=1e-5), r"\[-1, 1\]"),
        (lambda: epsilon_lower_bound_cosines([0.1], dimension=10, delta=1e-5, confidence=2.0), "`confidence`"),
        (lambda: epsilon_lower_bound_cosines([0.1], dimension=10, delta=1e-5, interval="wald"), "`interval`"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_anderson_darling_statistic_matches_its_formula():
    from privaudit.stats.one_shot import anderson_gaussianity

    values = np.sort(np.random.default_rng(11).standard_t(8, size=500))
    n = values.size
    z = stats.norm.cdf((values - values.mean()) / values.std(ddof=1))
    i = np.arange(1, n + 1)
    statistic = -n - np.mean((2 * i - 1) * (np.log(z) + np.log1p(-z[::-1])))  # A² with estimated mean and variance
    check = anderson_gaussianity(values)
    assert check.statistic == pytest.approx(statistic, rel=1e-9)
    assert 0.01 <= check.pvalue <= 0.15 and check.rejected == (check.pvalue < 0.05)


@pytest.mark.parametrize(
    ("params", "scale", "shift"),
    [((0.0, 2.0, 1.0, 3.0), 1e-300, 0.0), ((0.0, 2.0, 1.0, 3.0), 1e300, 0.0), ((0.0, 1.0, 1.0, 1.5), 1e150, -3e151), ((0.0, 1.0, 1.0, 1.5), 1e-150, 7e-150)],
)
def test_two_gaussians_is_invariant_under_affine_maps_down_to_the_float_limits(params, scale, shift):
    # issue 19: σ ≈ 1e-300 or means near 1e300 gave tracebacks; ε is invariant under x -> scale·x + shift
    mu0, s0, mu1, s1 = params
    expected = epsilon_two_gaussians(mu0, s0, mu1, s1, delta=1e-5)
    moved = epsilon_two_gaussians(scale * mu0 + shift, scale * s0, scale * mu1 + shift, scale * s1, delta=1e-5)
    assert moved == pytest.approx(expected, rel=1e-6)


def test_two_gaussians_far_apart_or_with_extreme_variance_ratios():
    # means 1e300 standard deviations apart: ε > 1e8 at every δ, reported as inf (the documented cap)
    assert epsilon_two_gaussians(0.0, 1.0, 1e300, 1.0, delta=1e-5) == np.inf
    assert epsilon_two_gaussians(-1e300, 1.0, 1e300, 1.0, delta=0.5) == np.inf
    assert epsilon_two_gaussians(0.0, 1e-300, 1.0, 1e-300, delta=1e-5) == np.inf
    # a tiny variance next to a wide one: the narrow law's loss is unbounded. The old expanded
    # discriminant b² - 4ac cancelled to the wrong sign and reported ε = 0 for N(0, 1) vs N(30, 1e-16)
    assert epsilon_two_gaussians(0.0, 1.0, 30.0, 1e-8, delta=1e-5) == np.inf
    with pytest.raises(ValueError, match=r"`sigma1`/`sigma0`"):
        epsilon_two_gaussians(0.0, 1e-300, 0.0, 1.0, delta=1e-5)


BIG = np.finfo(np.float64).max
GDP_1 = gdp_epsilon(1.0, 1e-5)  # N(0, σ²) vs N(σ, σ²): 1-GDP whatever σ
GDP_2 = gdp_epsilon(2.0, 1e-5)
UNEQUAL = 17.09030650201507  # N(0, 1) vs N(1, 1.5²), the docstring's example, at any common scale


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        # means at ±1e300 and ±the largest float: the same law gives 0, opposite ends give the documented cap inf
        ((1e300, 1.0, 1e300, 1.0), 0.0),
        ((-1e300, 1e-300, -1e300, 1e-300), 0.0),
        ((1e300, 1.0, -1e300, 1.0), np.inf),
        ((1e300, 1e-300, -1e300, 1e-300), np.inf),
        ((BIG, 1.0, -BIG, 1.0), np.inf),
        ((-1e300, 1e300, 1e300, 1e300), GDP_2),
        ((BIG, BIG, -BIG, BIG), GDP_2),
        # σ ≈ 1e-300, and subnormal σ: halving the means rounded 5e-324 to 0 and gave ε = 0 for means one σ apart
        ((0.0, 1e-300, 1e-300, 1e-300), GDP_1),
        ((0.0, 1e-320, 1e-320, 1e-320), GDP_1),
        ((0.0, 5e-324, 5e-324, 5e-324), GDP_1),
        ((0.0, 1e-300, 1e-300, 1.5e-300), UNEQUAL),
        ((0.0, 1e300, 1e300, 1.5e300), UNEQUAL),
        ((1e300, 1e-300, 1e300, 1e-300), 0.0),
        # refused, naming the argument
        ((0.0, 1e-300, 0.0, 1.0), "`sigma1`/`sigma0`"),
        ((0.0, 0.0, 0.0, 1e-300), "`sigma0`"),
        ((0.0, 1e-300, 0.0, -1e-300), "`sigma1`"),
        ((np.inf, 1e-300, 0.0, 1e-300), "`mu0`"),
        ((0.0, 1.0, -np.inf, 1.0), "`mu1`"),
        ((0.0, np.inf, 0.0, 1.0), "`sigma0`"),
    ],
)
def test_two_gaussians_at_extreme_means_and_tiny_sigmas_is_a_number_or_names_the_argument(params, expected):
    # issue 19: extreme means and σ ≈ 1e-300 gave tracebacks and RuntimeWarnings; now a number (inf is the
    # documented cap for laws more than 1e6 σ apart) or a ValueError that names the argument, and no warning
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=re.escape(expected)):
            epsilon_two_gaussians(*params, delta=1e-5)
        return
    epsilon = epsilon_two_gaussians(*params, delta=1e-5)
    assert isinstance(epsilon, float) and not np.isnan(epsilon)
    assert epsilon == pytest.approx(expected, rel=1e-6)
