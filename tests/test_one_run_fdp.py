"""One-run bounds against f-DP, from white-box Gaussian sums, and the best of them.

Oracles: the exact binomial test (f-DP under perfect privacy is Binomial(r, ½)
of right guesses), the noncentral t law checked by simulation, closed forms,
and Monte Carlo coverage on Gaussian-mechanism scores of known ε. Each
coverage test runs 500 seeded trials; the 95% bound may exceed the truth in
at most 41 (P[Bin(500, 0.05) > 41] < 0.001), as in the rest of the suite.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit import (
    SubsampledGaussian,
    epsilon_one_run_fdp,
    epsilon_one_run_gaussian,
    epsilon_one_run_sweep,
    gdp_epsilon,
    one_run_lower_bound,
)
from privaudit.stats.one_run_fdp import fdp_rejects

TRIALS = 500
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))  # 41
DELTA = 1e-5
MUS = (0.5, 1.0, 2.0, 4.0)


def gaussian_mechanism_scores(mu: float, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Canaries included by fair coins; scores N(μ, 1) when in, N(0, 1) when out: exactly μ-GDP per canary."""
    rng = np.random.default_rng(seed)
    member = rng.random(m) < 0.5
    return mu * member + rng.normal(size=m), member


@pytest.mark.parametrize(("m", "r"), [(1000, 20), (1000, 100), (100, 100), (10_000, 500)])
@pytest.mark.parametrize("level", [0.05, 0.01])
def test_under_perfect_privacy_the_recursion_is_the_binomial_test_or_more_cautious(m, r, level):
    # f(α) = 1 - α: right guesses are Binomial(r, ½); the exact test rejects from v_exact on
    def identity(x):
        return x

    v_fdp = min(v for v in range(r + 1) if fdp_rejects(identity, m, r, v, level))
    v_exact = min(v for v in range(r + 1) if stats.binom.sf(v - 1, r, 0.5) <= level)
    assert v_exact <= v_fdp <= v_exact + 1
    assert all(fdp_rejects(identity, m, r, v, level) for v in range(v_fdp, r + 1))  # monotone in v


def test_rejection_is_monotone_in_mu_and_the_bound_sits_at_its_edge():
    result = epsilon_one_run_fdp(*gaussian_mechanism_scores(2.0, 2000, 3), delta=DELTA, num_guesses=[400])
    mu = result.parameter
    assert 0.5 < mu < 2.5
    assert result.epsilon == pytest.approx(float(gdp_epsilon(mu, DELTA)))
    # the reported μ is rejected at the level used and a slightly larger one is not
    from privaudit.stats.one_run_fdp import _gdp_complement

    level = 0.05
    assert fdp_rejects(_gdp_complement(mu), 2000, result.num_guesses, result.num_correct, level)
    assert not fdp_rejects(_gdp_complement(mu + 1e-3), 2000, result.num_guesses, result.num_correct, level)


@pytest.mark.parametrize("mu", MUS)
def test_fdp_bound_coverage_on_the_gaussian_mechanism(mu):
    truth = float(gdp_epsilon(mu, DELTA))
    bounds = np.array([epsilon_one_run_fdp(*gaussian_mechanism_scores(mu, 1000, seed), delta=DELTA).epsilon for seed in range(TRIALS)])
    assert np.count_nonzero(bounds > truth) <= ALLOWED
    assert np.median(bounds) > 0.0  # it finds the leakage


@pytest.mark.parametrize("mu", MUS)
def test_gaussian_bound_coverage_is_nominal(mu):
    # exact: the exceedance rate is 5% itself, within binomial noise
    truth = float(gdp_epsilon(mu, DELTA))
    results = [epsilon_one_run_gaussian(*gaussian_mechanism_scores(mu, 1000, seed), delta=DELTA) for seed in range(TRIALS)]
    exceed = np.count_nonzero(np.array([result.epsilon for result in results]) > truth)
    assert exceed <= ALLOWED
    assert exceed >= int(stats.binom.ppf(0.001, TRIALS, 0.05))  # not conservative beyond noise: it is exact
    # tight: the median μ bound is within about 1.645 standard errors of μ; for balanced sides the
    # standardised difference has SE ≈ √((4 + μ²/2)/m)
    assert np.median([result.mu for result in results]) > mu - 2.0 * np.sqrt((4.0 + mu**2 / 2.0) / 1000)


def test_gaussian_bound_on_sums_of_laplace_steps_is_asymptotic_and_covers():
    # 100 steps of a Laplace mechanism per canary; the sum is Gaussian only in the limit
    dp_accounting = pytest.importorskip("dp_accounting")
    steps, scale, m = 100, 5.0, 1000
    pld = dp_accounting.pld.privacy_loss_distribution.from_laplace_mechanism(scale, sensitivity=1.0, value_discretization_interval=1e-4)
    truth = pld.self_compose(steps).get_epsilon_for_delta(DELTA)  # the whole transcript: at least what the sum leaks
    bounds = []
    for seed in range(TRIALS):
        rng = np.random.default_rng(seed)
        member = rng.random(m) < 0.5
        sums = steps * member + rng.laplace(scale=scale, size=(m, steps)).sum(axis=1)
        result = epsilon_one_run_gaussian(sums, member, delta=DELTA, gaussian_noise=False)
        assert not result.exact and result.kind == "approximate lower bound"
        bounds.append(result.epsilon)
    assert np.count_nonzero(np.array(bounds) > truth) <= ALLOWED
    assert np.median(bounds) > 0.0


@pytest.mark.parametrize("mu", MUS)
def test_best_of_the_methods_covers(mu):
    truth = float(gdp_epsilon(mu, DELTA))
    results = [one_run_lower_bound(*gaussian_mechanism_scores(mu, 500, seed), delta=DELTA) for seed in range(TRIALS)]
    bounds = np.array([result.epsilon for result in results])
    assert np.count_nonzero(bounds > truth) <= ALLOWED
    assert all(result.num_tests == 20 and result.valid for result in results)


def test_best_of_the_methods_is_the_maximum_of_its_own_candidates_and_beats_steinke():
    scores, member = gaussian_mechanism_scores(2.0, 10_000, 0)
    result = one_run_lower_bound(scores, member, delta=DELTA)
    assert result.epsilon == max(candidate[3] for candidate in result.candidates)
    assert {candidate[0] for candidate in result.candidates} == {"steinke", "fdp"}
    # f-DP at level α/20 against Steinke's own sweep at α/10: the f-DP analysis is tighter for a Gaussian mechanism
    assert result.method == "fdp"
    assert result.epsilon > epsilon_one_run_sweep(scores, member, delta=DELTA).epsilon


def test_the_gaussian_bound_inverts_the_noncentral_t_law():
    scores, member = gaussian_mechanism_scores(1.0, 400, 5)
    result = epsilon_one_run_gaussian(scores, member, delta=DELTA, confidence=0.9)
    n1, n0 = result.num_in, result.num_out
    noncentrality = result.mu / np.sqrt(1 / n1 + 1 / n0)
    # at the bound, a t statistic this large or larger has probability 10% (the bound is exact)
    assert stats.nct.sf(result.t_statistic, n1 + n0 - 2, noncentrality) == pytest.approx(0.1, abs=1e-6)
    assert stats.ttest_ind(scores[member], scores[~member]).statistic == pytest.approx(result.t_statistic)


def test_fdp_against_a_subsampled_gaussian_is_valid_and_full_batch_is_gdp():
    scores, member = gaussian_mechanism_scores(2.0, 2000, 1)
    # without subsampling, T steps of noise σ are (√T/σ)-GDP: the PLD family reduces to GDP exactly
    full = epsilon_one_run_fdp(scores, member, delta=DELTA, family=SubsampledGaussian(1.0, 4))
    assert full.family == "gdp" and full.epsilon == epsilon_one_run_fdp(scores, member, delta=DELTA).epsilon
    sub = epsilon_one_run_fdp(scores, member, delta=DELTA, family=SubsampledGaussian(0.5, 2), num_guesses=[1000])
    assert sub.family.startswith("pld") and sub.parameter_name == "noise_multiplier"
    assert 0.0 < sub.epsilon < 50.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"is_member": [0.5] * 10}, "is_member"),
        ({"is_member": ["yes"] * 10}, "is_member"),
        ({"is_member": [True] * 9}, "same shape"),
        ({"is_member": [True] + [False] * 9}, "at least 2"),
        ({"inclusion_prob": 0.0}, "inclusion_prob"),
        ({"inclusion_prob": 1.0}, "inclusion_prob"),
        ({"inclusion_prob": 0.3}, "inclusion_prob"),
        ({"methods": ("steinke", "magic")}, "methods"),
        ({"methods": ()}, "methods"),
        ({"delta": 0.0}, "delta"),
        ({"family": "laplace"}, "family"),
        ({"num_guesses": [0]}, "num_guesses"),
    ],
)
def test_bad_input_names_the_argument(kwargs, message):
    arguments = {"scores": np.arange(10.0), "is_member": [True, False] * 5, "delta": DELTA} | kwargs
    with pytest.raises(ValueError, match=message):
        one_run_lower_bound(**arguments)


def test_inclusion_prob_other_than_half_is_allowed_for_the_gaussian_method_only():
    scores, member = gaussian_mechanism_scores(1.0, 500, 2)
    result = one_run_lower_bound(scores, member, delta=DELTA, methods=("gaussian",), inclusion_prob=0.3)
    assert result.method == "gaussian" and result.num_tests == 1 and result.epsilon > 0
