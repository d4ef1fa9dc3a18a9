"""Conversions and trade-off curves against mpmath, closed forms and dp_accounting's RDP accountant."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privaudit import (
    gaussian_epsilon,
    gaussian_noise_multiplier,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    tradeoff_eps_delta,
    tradeoff_gdp,
)
from privaudit.stats.families import EpsilonDelta, GaussianDP


def gdp_delta_mpmath(epsilon, mu):
    mpmath.mp.dps = 60
    e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
    return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


# (ε, μ) pairs whose δ is representable in double precision (δ > 1e-300)
TAIL_CASES = [
    (epsilon, mu) for mu in (0.01, 0.5, 1.0, 3.0, 10.0, 20.0) for epsilon in (0.0, 0.1, 1.0, 5.0, 20.0, 50.0) if gdp_delta_mpmath(epsilon, mu) > 1e-300
]


@pytest.mark.parametrize(("epsilon", "mu"), TAIL_CASES)
def test_gdp_delta_matches_mpmath_in_the_tails(epsilon, mu):
    assert gdp_delta(epsilon, mu) == pytest.approx(float(gdp_delta_mpmath(epsilon, mu)), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(mu=st.floats(0.05, 15.0), log_delta=st.floats(-30.0, -1.0))
def test_gdp_epsilon_inverts_gdp_delta_and_rounds_down(mu, log_delta):
    delta = float(np.exp(log_delta))
    epsilon = gdp_epsilon(mu, delta)
    if epsilon == 0.0:
        assert gdp_delta(0.0, mu) <= delta * (1 + 1e-9)
        return
    assert gdp_delta(epsilon, mu) >= delta  # rounded down: δ at the returned ε is not below target
    assert gdp_delta(epsilon, mu) == pytest.approx(delta, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.01, 30.0), log_delta=st.floats(-30.0, -1.0))
def test_gdp_mu_inverts_in_mu_and_rounds_down(epsilon, log_delta):
    delta = float(np.exp(log_delta))
    mu = gdp_mu(epsilon, delta)
    assert gdp_delta(epsilon, mu) <= delta
    assert gdp_delta(epsilon, mu) == pytest.approx(delta, rel=1e-6)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("steps", [1, 16])
def test_gaussian_epsilon_equals_gdp_without_subsampling(sigma, steps):
    # T compositions of the Gaussian mechanism with noise σ are exactly (√T/σ)-GDP
    expected = gdp_epsilon(np.sqrt(steps) / sigma, 1e-5)
    assert gaussian_epsilon(sigma, 1e-5, num_steps=steps) == pytest.approx(expected, rel=2e-3)
    assert gaussian_epsilon(sigma, 1e-5, num_steps=steps, pessimistic=False) <= gaussian_epsilon(sigma, 1e-5, num_steps=steps)


def test_subsampled_gaussian_is_tighter_than_rdp():
    import dp_accounting

    sigma, q, steps = 1.0, 0.01, 1000
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    rdp = dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(1e-5)
    pld = gaussian_epsilon(sigma, 1e-5, sampling_prob=q, num_steps=steps)
    assert pld <= rdp <= 1.5 * pld


def test_noise_multiplier_calibration_is_near_minimal():
    sigma = gaussian_noise_multiplier(2.0, 1e-5)
    assert gaussian_epsilon(sigma, 1e-5) <= 2.0 < gaussian_epsilon(sigma * 0.998, 1e-5)
    assert sigma == pytest.approx(1 / gdp_mu(2.0, 1e-5), rel=1e-3)


def test_tradeoff_gdp_is_the_neyman_pearson_curve():
    # the most powerful test of N(0,1) vs N(μ,1) at level α rejects above t = Φ⁻¹(1-α)
    mu = 1.3
    for alpha in (1e-6, 0.01, 0.3, 0.9):
        t = stats.norm.isf(alpha)
        assert tradeoff_gdp(alpha, mu) == pytest.approx(stats.norm.cdf(t, loc=mu), rel=1e-12)
    grid = np.linspace(0.0, 1.0, 101)
    assert tradeoff_gdp(tradeoff_gdp(grid, mu), mu) == pytest.approx(grid, abs=1e-12)  # symmetric


def test_tradeoff_eps_delta_is_the_piecewise_definition():
    epsilon, delta = 1.0, 1e-3
    for alpha in np.linspace(0.0, 1.0, 41):
        expected = max(0.0, 1 - delta - np.exp(epsilon) * alpha, np.exp(-epsilon) * (1 - delta - alpha))
        assert tradeoff_eps_delta(alpha, epsilon, delta) == pytest.approx(expected)
    grid = np.linspace(0.0, 1.0, 101)
    assert tradeoff_eps_delta(tradeoff_eps_delta(grid, 0.7, 0.0), 0.7, 0.0) == pytest.approx(grid, abs=1e-12)


@pytest.mark.parametrize("theta", [0.3, 1.0, 2.5])
def test_families_recover_their_parameter_from_points_on_their_curve(theta):
    alphas = np.array([1e-4, 0.01, 0.1, 0.3])
    gdp = GaussianDP(1e-5)
    assert gdp.parameter_from_errors(alphas, tradeoff_gdp(alphas, theta)) == pytest.approx(theta, rel=1e-9)
    pure = EpsilonDelta(0.0)
    on_curve = tradeoff_eps_delta(alphas, theta, 0.0)
    assert pure.parameter_from_errors(alphas, on_curve) == pytest.approx(theta, rel=1e-9)
    low, high = gdp.region(alphas, theta)
    assert low == pytest.approx(tradeoff_gdp(alphas, theta))
    assert high == pytest.approx(1 - tradeoff_gdp(1 - alphas, theta))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: gdp_delta(-1.0, 1.0), "`epsilon`"),
        (lambda: gdp_delta(1.0, np.nan), "`mu`"),
        (lambda: gdp_epsilon(1.0, 1.0), "`delta`"),
        (lambda: gdp_mu(-1.0, 1e-5), "`epsilon`"),
        (lambda: gaussian_epsilon(0.0, 1e-5), "`noise_multiplier`"),
        (lambda: gaussian_epsilon(1.0, 1e-5, sampling_prob=1.5), "`sampling_prob`"),
        (lambda: gaussian_epsilon(1.0, 1e-5, num_steps=0), "`num_steps`"),
        (lambda: gaussian_noise_multiplier(0.0, 1e-5), "`epsilon`"),
        (lambda: tradeoff_gdp(1.5, 1.0), "`alpha`"),
        (lambda: tradeoff_eps_delta(0.5, 1.0, 1.0), "`delta`"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def gdp_epsilon_mpmath(mu, delta):
    """ε(δ) of μ-GDP: the root of Eq. 6 in mpmath at 60 digits."""
    mpmath.mp.dps = 60
    m, d = mpmath.mpf(mu), mpmath.mpf(delta)
    return mpmath.findroot(lambda e: mpmath.log(gdp_delta_mpmath(e, m)) - mpmath.log(d), mu * mu / 2 + 3 * mu)


@pytest.mark.parametrize(("sigma", "steps", "delta"), [(1.0, 20, 1e-15), (0.5, 100, 1e-100), (3.0, 10**6, 1e-30), (1.0, 1, 1e-300)])
def test_gaussian_epsilon_without_subsampling_is_exact_gdp_at_small_delta(sigma, steps, delta):
    # issue 19: (1.0, 1e-15, 20 steps) gave inf; T Gaussian steps are exactly (√T/σ)-GDP
    expected = float(gdp_epsilon_mpmath(np.sqrt(steps) / sigma, delta))
    upper = gaussian_epsilon(sigma, delta, num_steps=steps)
    lower = gaussian_epsilon(sigma, delta, num_steps=steps, pessimistic=False)
    assert lower <= expected <= upper
    assert upper == pytest.approx(expected, rel=1e-9)
    assert lower == pytest.approx(expected, rel=1e-9)


def test_gaussian_epsilon_at_the_issue_values():
    assert round(gaussian_epsilon(1.0, 1e-15, sampling_prob=1, num_steps=20), 2) == 44.94


@pytest.mark.parametrize("sampling_prob", [1.0, 0.5])
def test_extreme_noise_gives_zero_or_names_the_argument(sampling_prob):
    # σ = 1e300: μ = 1e-300, δ(0) = 2Φ(μ/2) - 1 < δ, so ε = 0 (subsampling only lowers it)
    assert gaussian_epsilon(1e300, 1e-5, sampling_prob=sampling_prob, num_steps=10) == 0.0
    with pytest.raises(ValueError, match="`noise_multiplier`"):
        gaussian_epsilon(1e-300, 1e-5, sampling_prob=sampling_prob, num_steps=10)
    with pytest.raises(ValueError, match="`num_steps`"):
        gaussian_epsilon(1.0, 1e-5, num_steps=10**400)


def test_oversized_plds_are_refused_up_front_with_the_estimate():
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"`noise_multiplier`.*about [0-9.e+]+ grid points"):
        gaussian_epsilon(0.1, 1e-5, sampling_prob=0.5, num_steps=10**5)
    assert time.perf_counter() - start < 1.0  # refused before any PLD is built


def test_pld_grid_estimate_tracks_dp_accounting():
    from privaudit.stats.conversions import pld_grid_points

    # dp_accounting's composed grids, counted once: 69,657, 311,087, 36,685 and 20,545 points
    for args, actual in [
        ((1.0, 0.01, 10**5, 1e-3), 69_657),
        ((0.1, 1e-12, 10**5, 1e-3), 311_087),
        ((0.3, 1e-12, 10**5, 1e-3), 36_685),
        ((1.0, 0.01, 1000, 1e-3), 20_545),
    ]:
        assert actual / 2 <= pld_grid_points(*args) <= 2 * actual


def test_many_steps_with_tiny_sampling_compose_by_squaring():
    # q = 1e-12, T = 1e9 (issue 19: > 400 s). dp_accounting's RDP accountant, an upper bound, gives ε = 0,
    # so the true ε is 0 and the pessimistic PLD may only add its discretisation (1e-4 per grid step)
    import dp_accounting

    event = dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(1e-12, dp_accounting.GaussianDpEvent(1.0)), 10**9)
    assert dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(1e-5) == 0.0
    value = gaussian_epsilon(1.0, 1e-5, sampling_prob=1e-12, num_steps=10**9)
    assert 0.0 <= value <= 10 * 1e-4
