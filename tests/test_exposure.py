"""Exposure: brute-force ranks, enumerated spaces, mpmath tails, baselines, and the ε bound's validity."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privaudit import (
    epsilon_from_exposure,
    exact_exposure,
    exposure,
    exposure_extrapolated,
    random_guessing_exposure,
)
from privaudit.stats.exposure import skewnorm_logcdf

TRIALS = 500
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))


@settings(max_examples=60, deadline=None)
@given(
    canaries=st.lists(st.integers(-5, 5), min_size=1, max_size=20),
    references=st.lists(st.integers(-5, 5), min_size=1, max_size=40),
)
def test_ranks_match_brute_force_with_ties(canaries, references):
    result = exposure(canaries, references)
    for canary, rank, value in zip(canaries, result.ranks, result.exposures, strict=True):
        expected_rank = 1 + sum(1 for r in references if r <= canary)  # ties count against the canary
        assert rank == expected_rank
        assert value == pytest.approx(math.log2(len(references)) - math.log2(expected_rank))


def test_exact_exposure_over_an_enumerated_space():
    # a 3-digit "pin": the space R holds all 1000 candidates, the canary among them
    rng = np.random.default_rng(1)
    space = rng.normal(10.0, 1.0, 1000)
    canary = space[17]
    rank = int(np.sum(space <= canary))
    result = exact_exposure([canary], space)
    assert result.ranks[0] == rank
    assert result.exposures[0] == pytest.approx(math.log2(1000) - math.log2(rank))
    # the most likely candidate has the largest possible exposure, log2 |R|
    assert exact_exposure([space.min()], space).exposures[0] == pytest.approx(math.log2(1000))


def test_exact_exposure_needs_the_canary_inside_the_space():
    with pytest.raises(ValueError, match="`candidate_losses` must contain"):
        exact_exposure([0.0], [1.0, 2.0])


def _skewnorm_logcdf_mpmath(x, a):
    mpmath.mp.dps = 60
    density = lambda t: 2 * mpmath.npdf(t) * mpmath.ncdf(a * t)
    # the mass sits within ~1/|x| of x: break the interval there
    points = [-mpmath.inf] + [x - step for step in (50, 5, 1, 0.1, 0.01, 0.001)] + [x]
    return float(mpmath.log(mpmath.quad(density, points)))


@pytest.mark.parametrize("a", [-4.0, 0.0, 2.0, 6.0])
@pytest.mark.parametrize("x", [-3.0, -30.0, -45.0, -200.0])
def test_skewnorm_log_cdf_stays_finite_and_accurate_in_the_tail(a, x):
    value = float(skewnorm_logcdf(x, a, 0.0, 1.0))
    assert np.isfinite(value)
    assert value == pytest.approx(_skewnorm_logcdf_mpmath(x, a), rel=1e-7)


def test_extrapolated_exposure_agrees_with_sampled_exposure_and_the_true_tail():
    rng = np.random.default_rng(3)
    references = stats.skewnorm.rvs(3.0, loc=5.0, scale=2.0, size=200_000, random_state=rng)
    canaries = np.array([4.0, 5.0, 6.0])
    fitted = exposure_extrapolated(canaries, references)
    sampled = exposure(canaries, references)
    truth = -stats.skewnorm.logcdf(canaries, 3.0, loc=5.0, scale=2.0) / np.log(2)
    assert fitted.exposures == pytest.approx(truth, rel=0.02)  # fit error grows into the tail
    assert fitted.exposures == pytest.approx(sampled.exposures, rel=0.02)
    assert fitted.ks_statistic < 0.01 and fitted.kind == "estimate"
    # a canary far below every reference: rank exposure saturates at log2 n, extrapolation does not
    far = exposure_extrapolated([-60.0], references)
    assert np.isfinite(far.exposures[0]) and far.exposures[0] > 100


def _baseline_by_enumeration(n):
    exposures = np.log2(n) - np.log2(np.arange(1, n + 2))  # each rank 1..n+1 equally likely
    return exposures.mean(), np.quantile(exposures, [0.5, 0.75], method="inverted_cdf")


@pytest.mark.parametrize("n", [1, 2, 3, 10, 99, 1000])
def test_random_guessing_baselines_are_exact_for_finite_n(n):
    mean, (median, q75) = _baseline_by_enumeration(n)
    baseline = random_guessing_exposure(n)
    assert baseline.mean == pytest.approx(mean, rel=1e-10)
    assert baseline.median == pytest.approx(median, abs=1e-12)
    assert baseline.quantile_75 == pytest.approx(q75, abs=1e-12)


def test_random_guessing_baselines_tend_to_the_notes_values():
    # Jagielski's note: mean ≈ 1/ln 2, median ≈ 1, 75th percentile ≈ 2
    baseline = random_guessing_exposure(10**9)
    assert baseline.mean == pytest.approx(1 / math.log(2), abs=1e-6)
    assert baseline.median == pytest.approx(1.0, abs=1e-6)
    assert baseline.quantile_75 == pytest.approx(2.0, abs=1e-6)


def test_random_guessing_baselines_by_simulation():
    rng = np.random.default_rng(5)
    n, m = 10_000, 20_000
    values = exposure(rng.random(m), rng.random(n)).exposures
    baseline = random_guessing_exposure(n)
    assert values.mean() == pytest.approx(baseline.mean, abs=4 * values.std() / math.sqrt(m))
    assert np.mean(values >= baseline.median) == pytest.approx(0.5, abs=0.02)
    assert np.mean(values >= baseline.quantile_75) == pytest.approx(0.25, abs=0.02)


def test_epsilon_from_exposure_against_the_notes_formula_and_clopper_pearson():
    rng = np.random.default_rng(6)
    canaries, references = rng.normal(-2.0, 1.0, 501), rng.normal(0.0, 1.0, 10_000)
    result = epsilon_from_exposure(canaries, references)
    median_canary = np.median(canaries)
    median_exposure = exposure([median_canary], references).exposures[0]
    false_positives = int(np.sum(references <= median_canary))
    assert result.threshold == median_canary and result.false_positives == false_positives
    # the note's point estimate: ε ≈ ln 2 · (median exposure − 1); ranks here include the +1
    tpr, fpr = 251 / 501, false_positives / 10_000
    assert result.epsilon_estimate == pytest.approx(math.log(tpr / fpr))
    assert result.epsilon_estimate == pytest.approx(math.log(2) * (median_exposure - 1), abs=0.05)
    # independent Clopper–Pearson from scipy's exact binomial interval
    tpr_lo = stats.binomtest(251, 501).proportion_ci(0.95, method="exact").low
    fpr_hi = stats.binomtest(false_positives, 10_000).proportion_ci(0.95, method="exact").high
    assert result.epsilon == pytest.approx(math.log(tpr_lo / fpr_hi), rel=1e-9)
    assert epsilon_from_exposure(canaries, references, duplicates=4).epsilon == pytest.approx(result.epsilon / 4)


def test_epsilon_from_exposure_coverage_with_known_epsilon():
    # Laplace shift: loss ~ Laplace(0, 1) for references and Laplace(-ε, 1) for canaries gives
    # likelihood ratios <= e^ε, so every threshold attack has TPR/FPR <= e^ε: the true ε is 1.
    epsilon, m, n = 1.0, 200, 2000
    rng = np.random.default_rng(8)
    exceed = 0
    for _ in range(TRIALS):
        canaries = rng.laplace(-epsilon, 1.0, m)
        references = rng.laplace(0.0, 1.0, n)
        exceed += epsilon_from_exposure(canaries, references, quantile=0.25).epsilon > epsilon
    assert exceed <= ALLOWED


def test_epsilon_from_exposure_is_zero_on_null_data():
    rng = np.random.default_rng(9)
    positives = sum(epsilon_from_exposure(rng.normal(size=300), rng.normal(size=3000)).epsilon > 0 for _ in range(TRIALS))
    assert positives <= ALLOWED


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: exposure([np.nan], [1.0]), "`canary_losses`"),
        (lambda: exposure([1.0], []), "`reference_losses`"),
        (lambda: exposure([[1.0]], [1.0]), "`canary_losses`"),
        (lambda: exposure_extrapolated([1.0], [2.0, 2.0, 2.0]), "`reference_losses`"),
        (lambda: epsilon_from_exposure([1.0], [1.0], quantile=1.5), r"`quantile` must be in \[0, 1\]"),
        (lambda: epsilon_from_exposure([1.0], [1.0], confidence=1.0), "`confidence`"),
        (lambda: epsilon_from_exposure([1.0], [1.0], duplicates=0), "`duplicates`"),
        (lambda: random_guessing_exposure(0), "`num_references`"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def skewnorm_logcdf_mpmath(z, a):
    """log of 2 ∫_{-∞}^z φ(t) Φ(a t) dt at 50 digits, integrated in u = z - t."""
    import mpmath

    mpmath.mp.dps = 50
    z, a = mpmath.mpf(z), mpmath.mpf(a)
    rate = abs(z) * (1 + max(a, 0) ** 2)
    value = mpmath.quad(lambda u: 2 * mpmath.npdf(z - u) * mpmath.ncdf(a * (z - u)), [0, 1 / rate, 10 / rate, mpmath.inf])
    return float(mpmath.log(value))


@pytest.mark.parametrize("a", [-5.0, 0.0, 0.5, 3.0, 30.0])
@pytest.mark.parametrize("z", [-50.0, -1e3, -2e4, -1e10])
def test_skewnorm_log_cdf_matches_mpmath_far_in_the_tail(a, z):
    assert float(skewnorm_logcdf(z, a, 0.0, 1.0)) == pytest.approx(skewnorm_logcdf_mpmath(z, a), rel=1e-9)


def test_extrapolated_exposure_of_extreme_losses_is_finite_and_ordered():
    # issue 19: canary losses of -1e10 or less gave NaN and RuntimeWarnings
    import warnings

    rng = np.random.default_rng(4)
    references = rng.normal(0.0, 1.0, 2000)
    canaries = np.array([-4.0, -1e3, -1e10, -1e300, -1.7e308, 1e300])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = exposure_extrapolated(canaries, references)
    bits = result.exposures
    assert np.all(np.isfinite(bits)) and bits[-1] == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.diff(bits[:5]) >= 0)  # lower loss, more exposure; clipping never reverses it
    z = (-1e10 - result.loc) / result.scale
    assert bits[2] == pytest.approx(-skewnorm_logcdf_mpmath(z, result.shape) / np.log(2), rel=1e-9)


def test_extrapolated_exposure_fits_references_near_the_float_limits():
    rng = np.random.default_rng(6)
    base = rng.normal(0.0, 1.0, 500)
    for scale in (1e-300, 1e300):
        scaled = exposure_extrapolated([-4.0 * scale], base * scale)
        plain = exposure_extrapolated([-4.0], base)
        assert scaled.exposures[0] == pytest.approx(plain.exposures[0], rel=1e-3)  # exposure is scale-free
    with pytest.raises(ValueError, match="`reference_losses` must span"):
        exposure_extrapolated([0.0], [1e308, -1e308, 0.0])


@pytest.mark.parametrize(("a", "z"), [(1.8e7, -390.0), (1e3, -50.0), (1e3, -5.0)])
def test_skewnorm_log_cdf_with_a_huge_fitted_shape(a, z):
    # a fit to 4 references gave a = 1.8e7; the quadrature's log Φ(a t) differences lost all precision
    assert float(skewnorm_logcdf(z, a, 0.0, 1.0)) == pytest.approx(skewnorm_logcdf_mpmath(z, a), rel=1e-8)
