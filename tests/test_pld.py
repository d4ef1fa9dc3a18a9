"""PLD audits of subsampled Gaussian mechanisms, and step-to-end composition (Tight Auditing App. A, §5.5)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit import SubsampledGaussian, epsilon_lower_bound, gaussian_epsilon, gdp_epsilon, gdp_mu, step_to_end_epsilon
from privaudit.stats.tradeoff import tradeoff_gdp

ALPHAS = np.array([1e-5, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9])


@pytest.mark.parametrize(("sigma", "steps"), [(1.0, 1), (2.0, 4)])
def test_tradeoff_is_a_lower_envelope_of_the_gaussian_curve(sigma, steps):
    # without subsampling the mechanism is exactly (√T/σ)-GDP: the PLD lines must stay below G_μ
    mechanism = SubsampledGaussian(1.0, steps, num_lines=256)
    exact = tradeoff_gdp(ALPHAS, np.sqrt(steps) / sigma)
    approx = mechanism.tradeoff(ALPHAS, sigma)
    assert np.all(approx <= exact + 1e-9)
    assert approx == pytest.approx(exact, abs=0.01)


def test_subsampling_raises_the_curve():
    # less leakage: a subsampled mechanism's trade-off curve lies above the full one
    full = SubsampledGaussian(1.0, 10).tradeoff(ALPHAS, 1.0)
    sampled = SubsampledGaussian(0.1, 10).tradeoff(ALPHAS, 1.0)
    assert np.all(sampled >= full - 1e-9)


def test_noise_search_brackets_on_the_conservative_side():
    sigma0 = 1.25
    family = SubsampledGaussian(1.0, 1).family_for(1e-5)
    for alpha in (0.01, 0.1, 0.3):
        sigma = family.parameter_from_errors(alpha, tradeoff_gdp(alpha, 1 / sigma0))
        assert sigma0 <= sigma <= sigma0 * 1.05  # at least the true noise: a smaller ε


def test_pld_bound_agrees_with_gdp_on_the_gaussian_mechanism():
    rng = np.random.default_rng(0)
    in_scores, out_scores = rng.normal(1.0, 1.0, 10_000), rng.normal(0.0, 1.0, 10_000)
    pld = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, method=SubsampledGaussian(), threshold=0.5)
    gdp = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, threshold=0.5)
    assert pld.method == "pld" and pld.parameter_name == "noise_multiplier"
    assert pld.epsilon <= gdp.epsilon * 1.001  # conservative lines, optimistic-side ε
    assert pld.epsilon == pytest.approx(gdp.epsilon, rel=0.05)


def test_pld_bound_on_null_data_is_zero():
    rng = np.random.default_rng(1)
    result = epsilon_lower_bound(rng.normal(size=2000), rng.normal(size=2000), delta=1e-5, method=SubsampledGaussian(0.1, 10), threshold=0.0)
    assert result.epsilon == 0.0


@pytest.mark.parametrize("steps", [1, 10, 1000])
def test_step_to_end_without_subsampling_is_gdp_composition(steps):
    estimate = step_to_end_epsilon(1.5, delta=1e-5, num_steps=steps)
    assert estimate.epsilon == pytest.approx(gdp_epsilon(np.sqrt(steps) * gdp_mu(1.5, 1e-5), 1e-5), rel=1e-9)
    assert estimate.kind == "estimate"


def test_step_to_end_with_subsampling_uses_the_accountant():
    estimate = step_to_end_epsilon(4.377, delta=1e-5, num_steps=1000, sampling_prob=0.01)
    assert estimate.noise_multiplier == pytest.approx(1.0, rel=1e-3)  # 1-GDP has ε(1e-5) = 4.377
    optimistic = gaussian_epsilon(estimate.noise_multiplier, 1e-5, sampling_prob=0.01, num_steps=1000, pessimistic=False)
    assert estimate.epsilon == pytest.approx(optimistic, rel=1e-9)  # an estimate on the low side of the accountant
    assert estimate.epsilon <= gaussian_epsilon(1.0, 1e-5, sampling_prob=0.01, num_steps=1000)
    assert estimate.epsilon < step_to_end_epsilon(4.377, delta=1e-5, num_steps=1000).epsilon
    assert step_to_end_epsilon(0.0, delta=1e-5, num_steps=10).epsilon == 0.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: SubsampledGaussian(sampling_prob=0.0), "`sampling_prob`"),
        (lambda: SubsampledGaussian(num_steps=0), "`num_steps`"),
        (lambda: SubsampledGaussian().tradeoff(0.1, -1.0), "`noise_multiplier`"),
        (lambda: step_to_end_epsilon(-1.0, delta=1e-5, num_steps=1), "`step_epsilon`"),
        (lambda: step_to_end_epsilon(1.0, delta=2.0, num_steps=1), "`delta`"),
        (lambda: step_to_end_epsilon(1.0, delta=1e-5, num_steps=1, sampling_prob=0.0), "`sampling_prob`"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_without_subsampling_the_family_is_exact_gdp():
    # issue 19: sampling_prob = 1 must not go through a PLD. σ bound = √T/μ with μ the GDP bound
    rng = np.random.default_rng(3)
    in_scores, out_scores = rng.normal(1.0, 1.0, 5000), rng.normal(0.0, 1.0, 5000)
    steps = 10**9  # far beyond any PLD
    pld = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, method=SubsampledGaussian(1.0, steps), threshold=0.5)
    gdp = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, threshold=0.5)
    assert pld.parameter == pytest.approx(np.sqrt(steps) / gdp.parameter, rel=1e-9)
    assert pld.epsilon == pytest.approx(gdp.epsilon, rel=1e-9) and pld.epsilon <= gdp.epsilon
    assert SubsampledGaussian(1.0, 4).tradeoff(ALPHAS, 2.0) == pytest.approx(tradeoff_gdp(ALPHAS, 1.0), abs=1e-15)


def test_mechanisms_too_large_for_a_pld_are_refused_quickly_with_the_estimate():
    import time

    # issue 19: q = 1e-12, T = 1e9 ran > 400 s; the optimistic PLD drifts one grid step per step
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"`num_steps` 1000000000 .*about 1e\+09 grid points"):
        epsilon_lower_bound(np.ones(10), np.zeros(10), delta=1e-5, method=SubsampledGaussian(1e-12, 10**9), threshold=0.5)
    assert time.perf_counter() - start < 5.0


def test_the_noise_search_starts_at_the_smallest_noise_whose_pld_fits():
    from privaudit.stats.conversions import MAX_PLD_POINTS, pld_grid_points

    mechanism = SubsampledGaussian(0.5, 10**5)
    sigma = mechanism.smallest_noise()
    assert pld_grid_points(sigma, 0.5, 10**5, 1e-3, False) <= MAX_PLD_POINTS < pld_grid_points(sigma / 1.01, 0.5, 10**5, 1e-3, False)
