"""Property suite for the public stats API: any input either works or raises ValueError.

Generated arrays of every dtype a user might hand over (int, float32, bool,
complex, object with huge ints, strings), of any shape, with NaN, inf and the
extremes of float64 (±1e308, 1e-300) and of Python ints, are passed to each
public function of the statistical core together with generated keyword
arguments. The only exception allowed out is ValueError, and no RuntimeWarning
may be raised on the way. Where a call succeeds, its headline number is a
float that is NaN-free and, for lower bounds, >= 0.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import privaudit as pa
from privaudit.stats.panoramia import real_non_member_bound

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

EXTREMES = [0.0, -0.0, 1.0, -1.0, 0.5, 1e308, -1e308, 1.7976931348623157e308, 1e-300, -1e-300, 5e-324, np.nan, np.inf, -np.inf]
HUGE_INTS = [0, 1, 2, 10**6, 2**53 + 1, 2**63, 10**400, -(10**400)]

floats = st.one_of(st.sampled_from(EXTREMES), st.floats(allow_nan=True, allow_infinity=True), st.floats(-5, 5))
shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=12)


def _arrays():
    return st.one_of(
        hnp.arrays(np.float64, shapes, elements=floats),
        hnp.arrays(np.float64, st.integers(1, 25), elements=st.floats(-5, 5)),  # mostly well-formed
        hnp.arrays(np.float32, shapes, elements=st.floats(width=32, allow_nan=True)),
        hnp.arrays(np.int64, shapes),
        hnp.arrays(np.bool_, shapes),
        hnp.arrays(np.complex128, shapes, elements=st.complex_numbers(allow_nan=True)),
        hnp.arrays(np.complex128, st.integers(1, 12), elements=st.floats(-5, 5).map(complex)),  # zero imaginary parts
        st.lists(st.one_of(st.sampled_from(HUGE_INTS), st.integers(-5, 5)), max_size=12).map(lambda v: np.array(v, dtype=object)),
        st.lists(st.one_of(st.integers(-5, 5), st.sampled_from(HUGE_INTS)), max_size=12),
        st.lists(st.text(max_size=3), max_size=6).map(np.array),
        st.lists(st.floats(-5, 5).map(str), min_size=1, max_size=6),
        floats,
        st.none(),
    )


arrays = _arrays()
scalars = st.one_of(
    floats,
    st.sampled_from(HUGE_INTS),
    st.integers(-3, 40),
    st.complex_numbers(max_magnitude=10),
    st.sampled_from([np.complex128(1 + 1j), np.float32(0.5), np.int64(3), np.bool_(True), True, "0.5", "x", None, np.array([0.5])]),
)
probabilities = st.one_of(scalars, st.floats(1e-300, 1.0, exclude_max=True))
counts = st.one_of(scalars, st.integers(1, 60))


def call(function, *args, **kwargs):
    """Run ``function``; return its result or None on ValueError. Anything else fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return function(*args, **kwargs)
        except ValueError:
            return None


def check_bound(result, attribute="epsilon"):
    if result is not None:
        value = getattr(result, attribute)
        assert not np.isnan(value) and value >= 0.0


@SETTINGS
@given(
    arrays,
    arrays,
    probabilities,
    st.sampled_from(["gdp", "eps-delta", "pure", "x"]),
    st.sampled_from(["clopper-pearson", "jeffreys", "bayes", "katz-log"]),
    probabilities,
    st.one_of(st.sampled_from(["split", "best", "bonferroni"]), floats),
    st.one_of(st.none(), scalars),
)
def test_epsilon_lower_bound(in_scores, out_scores, delta, method, interval, confidence, threshold, seed):
    check_bound(
        call(
            pa.epsilon_lower_bound, in_scores, out_scores, delta=delta, method=method, interval=interval, confidence=confidence, threshold=threshold, seed=seed
        )
    )


@SETTINGS
@given(arrays, arrays, probabilities, probabilities)
def test_gdp_auc_lower_bound(in_scores, out_scores, delta, confidence):
    check_bound(call(pa.gdp_auc_lower_bound, in_scores, out_scores, delta=delta, confidence=confidence))


@SETTINGS
@given(arrays, arrays)
def test_metrics(in_scores, out_scores):
    call(pa.roc_curve, in_scores, out_scores)
    call(pa.roc_auc, in_scores, out_scores)
    call(pa.tpr_at_fpr, in_scores, out_scores)
    call(pa.precision_at_recall, in_scores, out_scores)


@SETTINGS
@given(arrays, arrays, probabilities, probabilities, counts)
def test_exposure_functions(canaries, references, quantile, confidence, duplicates):
    call(pa.exposure, canaries, references)
    call(pa.exact_exposure, canaries, references)
    call(pa.exposure_extrapolated, canaries, references)
    call(pa.random_guessing_exposure, duplicates)
    check_bound(call(pa.epsilon_from_exposure, canaries, references, quantile=quantile, confidence=confidence, duplicates=duplicates))


@SETTINGS
@given(scalars, scalars, probabilities)
def test_gdp_conversions(epsilon, mu, delta):
    call(pa.gdp_delta, epsilon, mu)
    call(pa.gdp_epsilon, mu, delta)
    call(pa.gdp_mu, epsilon, delta)
    call(pa.tradeoff_gdp, delta, mu)
    call(pa.tradeoff_eps_delta, delta, epsilon, mu)


@SETTINGS
@given(st.one_of(scalars, st.floats(0.3, 1e300)), probabilities, st.one_of(st.just(1.0), scalars), st.one_of(scalars, st.integers(1, 10**9)))
def test_gaussian_accounting(noise_multiplier, delta, sampling_prob, num_steps):
    # subsampled PLDs cost seconds; they are drawn with small step counts only (below), the rest is validation
    if isinstance(sampling_prob, float) and 0.0 < sampling_prob < 1.0 and not (isinstance(num_steps, int) and num_steps <= 50):
        num_steps = 10
    value = call(pa.gaussian_epsilon, noise_multiplier, delta, sampling_prob=sampling_prob, num_steps=num_steps)
    assert value is None or value >= 0.0
    call(pa.step_to_end_epsilon, noise_multiplier, delta=delta, num_steps=num_steps, sampling_prob=1.0)
    call(pa.gaussian_noise_multiplier, noise_multiplier, delta, num_steps=num_steps)
    call(pa.SubsampledGaussian, sampling_prob, num_steps)


@SETTINGS
@given(scalars, scalars, scalars, scalars, probabilities)
def test_epsilon_two_gaussians(mu0, sigma0, mu1, sigma1, delta):
    value = call(pa.epsilon_two_gaussians, mu0, sigma0, mu1, sigma1, delta=delta)
    assert value is None or value >= 0.0


@SETTINGS
@given(arrays, arrays, counts, probabilities, probabilities)
def test_one_shot(cosines, null_cosines, dimension, delta, confidence):
    call(pa.epsilon_one_shot, cosines, dimension=dimension, delta=delta)
    call(pa.epsilon_one_shot, cosines, null_cosines, delta=delta)
    check_bound(call(pa.epsilon_lower_bound_cosines, cosines, dimension=dimension, delta=delta, confidence=confidence))


@SETTINGS
@given(counts, counts, counts, st.one_of(probabilities, st.just(0.0)), probabilities, arrays, arrays)
def test_one_run(m, r, v, delta, confidence, scores, is_member):
    check_bound(call(pa.epsilon_one_run, m, r, v, delta=delta, confidence=confidence))
    check_bound(call(pa.epsilon_one_run_sweep, scores, is_member, delta=delta, confidence=confidence))


@SETTINGS
@given(arrays, arrays, arrays, probabilities, counts)
def test_panoramia(baseline, mia, is_member, confidence, levels):
    check_bound(call(pa.panoramia_bounds, baseline, mia, is_member, confidence=confidence, num_recall_levels=levels), "c_lb")
    check_bound(call(real_non_member_bound, mia, is_member, confidence=confidence))


@pytest.mark.parametrize(
    ("call_", "match"),
    [
        (lambda: pa.epsilon_lower_bound(np.array([1 + 1j, 2.0]), [0.0, 1.0], delta=1e-5), "`in_scores`"),
        (lambda: pa.exposure([1.0], np.array([1.0, 2.0 + 0j])), "`reference_losses`"),
        (lambda: pa.gdp_epsilon(1.0, np.complex128(1e-5 + 1e-3j)), "`delta`"),
        (lambda: pa.epsilon_lower_bound([1.0, 2.0], [0.0, 1.0], delta=1e-5, threshold=0.5, seed=1.5), "`seed`"),
        (lambda: pa.epsilon_lower_bound([1.0, 2.0], [0.0, 1.0], delta=1e-5, threshold=0.5, seed=-1), "`seed`"),
        (lambda: pa.epsilon_one_run(10**400, 1, 1, delta=0.0), "`num_canaries`"),
        (lambda: pa.gdp_mu(10**400, 1e-5), "`epsilon`"),
        (lambda: pa.roc_auc([10**400], [1.0]), "`in_scores`"),
        (lambda: pa.epsilon_one_shot([2e154, 0.0], dimension=10, delta=1e-5), "`canary_cosines`"),
        (lambda: pa.epsilon_one_run(6_250_864_808, 6_250_864_808, 6_250_864_808, delta=1e-5), "`num_canaries`"),
        (lambda: pa.tradeoff_gdp([0.1j], 1.0), "`alpha`"),
        (lambda: pa.gdp_delta(10**400, 1.0), "`epsilon`"),
    ],
)
def test_issue_19_inputs_name_the_argument(call_, match):
    # complex parts were dropped silently; seed 1.5 and ints beyond float raised TypeError/OverflowError;
    # cosines of 1e154 overflowed a variance, and 6e9 canaries asked for 47 GiB
    with pytest.raises(ValueError, match=match):
        call_()
