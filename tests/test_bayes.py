"""Bayesian credible bounds (Tight Auditing Eq. 13): quadrature vs independent integration and sampling."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from privaudit import epsilon_lower_bound, gdp_epsilon
from privaudit.stats.bayes import posterior_quantiles
from privaudit.stats.families import EpsilonDelta, GaussianDP

DELTA = 1e-5


def posterior_cdf_by_quad(family, fp, n_out, fn, n_in, theta):
    """P(θ⁺ <= θ) = P(β >= f_θ(α)), the attack's own direction (Eq. 13's lower edge), by adaptive quadrature."""
    fpr = stats.beta(0.5 + fp, 0.5 + n_out - fp)
    fnr = stats.beta(0.5 + fn, 0.5 + n_in - fn)

    def integrand(alpha):
        low, _ = family.region(np.array([alpha]), theta)
        return fpr.pdf(alpha) * fnr.sf(low[0])

    lo, hi = fpr.ppf(1e-12), fpr.isf(1e-12)
    value, _ = integrate.quad(integrand, lo, hi, limit=400, points=[fpr.median()])
    return value


@pytest.mark.parametrize(
    ("family", "counts"),
    [
        (GaussianDP(DELTA), (50, 1000, 80, 1000)),
        (GaussianDP(DELTA), (0, 500, 3, 400)),
        (EpsilonDelta(DELTA), (20, 1000, 400, 1000)),
        (EpsilonDelta(0.0), (5, 200, 60, 300)),
    ],
)
def test_quantiles_solve_the_integrated_posterior(family, counts):
    probabilities = [0.025, 0.05, 0.5, 0.975]
    thetas = posterior_quantiles(family, *counts, probabilities)
    for theta, p in zip(thetas, probabilities, strict=True):
        assert posterior_cdf_by_quad(family, *counts, theta) == pytest.approx(p, abs=2e-3)


def test_posterior_cdf_agrees_with_sampling():
    # Monte Carlo over the two Beta posteriors: fraction of (α, β) inside μ's GDP region
    rng = np.random.default_rng(12)
    fp, n_out, fn, n_in = 30, 600, 45, 600
    alpha = rng.beta(0.5 + fp, 0.5 + n_out - fp, 400_000)
    beta = rng.beta(0.5 + fn, 0.5 + n_in - fn, 400_000)
    (mu,) = posterior_quantiles(GaussianDP(DELTA), fp, n_out, fn, n_in, [0.05])
    z = stats.norm.isf(alpha)
    inside = beta >= stats.norm.cdf(z - mu)  # θ⁺ = max(0, Φ⁻¹(1 - α) - Φ⁻¹(β)) <= μ
    assert inside.mean() == pytest.approx(0.05, abs=3 * np.sqrt(0.05 * 0.95 / alpha.size) + 1e-3)


def test_credible_bound_is_close_to_clopper_pearson_with_many_observations():
    rng = np.random.default_rng(2)
    in_scores, out_scores = rng.normal(1.0, 1.0, 200_000), rng.normal(0.0, 1.0, 200_000)
    bayes = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, interval="bayes", threshold=0.5)
    exact = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, interval="clopper-pearson", threshold=0.5)
    assert bayes.kind == "credible bound"
    # the credible bound uses one-sided 5%, the CP bound 2.5% per rate: Bayes is a bit higher
    assert exact.epsilon <= bayes.epsilon <= gdp_epsilon(1.0, DELTA) * 1.01
    assert bayes.epsilon == pytest.approx(exact.epsilon, rel=0.02)
    low, high = bayes.epsilon_credible_interval
    assert low <= bayes.epsilon <= bayes.epsilon_median <= high


def test_credible_bound_coverage_on_gaussian_observations():
    # frequentist behaviour of the 95% credible bound for μ = 1 at a fixed threshold
    rng = np.random.default_rng(77)
    trials, n, mu = 500, 1000, 1.0
    fp = rng.binomial(n, stats.norm.sf(0.5), trials)
    fn = rng.binomial(n, stats.norm.cdf(0.5 - mu), trials)
    exceed = sum(posterior_quantiles(GaussianDP(DELTA), a, n, b, n, [0.05])[0] > mu for a, b in zip(fp, fn, strict=True))
    assert exceed <= stats.binom.ppf(0.999, trials, 0.05)


def test_null_posterior_puts_the_bound_at_zero():
    # equal error rates with FPR + FNR = 1: no evidence of leakage
    (mu,) = posterior_quantiles(GaussianDP(DELTA), 500, 1000, 500, 1000, [0.05])
    assert mu < 0.05


def test_identical_scores_give_a_zero_credible_bound():
    # issue 19: 1,000 identical scores a side gave ε = 0.137; the posterior mass of "no leakage" is ½ here
    scores = np.ones(1000)
    for method in ("gdp", "eps-delta", "pure"):
        result = epsilon_lower_bound(scores, scores, delta=DELTA, method=method, interval="bayes", seed=0)
        assert result.epsilon == 0.0 and result.parameter == 0.0 and result.epsilon_median == 0.0


@pytest.mark.parametrize("family", [GaussianDP(DELTA), EpsilonDelta(DELTA), EpsilonDelta(0.0)])
def test_bound_is_zero_exactly_when_no_leakage_has_posterior_mass_at_least_one_minus_c(family):
    # Monte Carlo over the two Beta posteriors: P(attack no better than f_0) decides whether the bound is 0
    rng = np.random.default_rng(5)
    for fp, n_out, fn, n_in in [(430, 1000, 520, 1000), (400, 1000, 520, 1000), (380, 1000, 560, 1000), (300, 500, 300, 500)]:
        alpha = rng.beta(0.5 + fp, 0.5 + n_out - fp, 200_000)
        beta = rng.beta(0.5 + fn, 0.5 + n_in - fn, 200_000)
        low, _ = family.region(alpha, 0.0)
        no_leak = float(np.mean(beta >= low))
        (bound,) = posterior_quantiles(family, fp, n_out, fn, n_in, [0.05])
        if no_leak > 0.05 + 0.003:
            assert bound == 0.0
        elif no_leak < 0.05 - 0.003:
            assert bound > 0.0


def test_null_credible_bound_is_zero_in_about_95_percent_of_data_sets():
    # issue 19: 100 of 100 null data sets gave a positive bound. Now P(bound > 0) ≈ 5%: at most the
    # count that Bin(200, 0.05) exceeds with probability < 0.001
    rng = np.random.default_rng(19)
    trials, n = 200, 1000
    fp, fn = rng.binomial(n, 0.5, trials), rng.binomial(n, 0.5, trials)  # threshold at the common median
    positive = sum(posterior_quantiles(GaussianDP(DELTA), a, n, b, n, [0.05])[0] > 0 for a, b in zip(fp, fn, strict=True))
    assert positive <= stats.binom.ppf(0.999, trials, 0.05)
