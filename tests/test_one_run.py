"""One-run bound: closed form, an mpmath p-value oracle, Monte Carlo validity, and the sweep's correction."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from privaudit import epsilon_one_run, epsilon_one_run_sweep

TRIALS = 500
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))


def p_value_mpmath(epsilon, m, r, v, delta):
    """Steinke et al.'s p-value with exact binomial sums at 50 digits."""
    mpmath.mp.dps = 50
    q = 1 / (1 + mpmath.exp(-mpmath.mpf(epsilon)))
    pmf = [mpmath.binomial(r, k) * q**k * (1 - q) ** (r - k) for k in range(r + 1)]
    tail = mpmath.fsum(pmf[v:])
    alpha = max([mpmath.fsum(pmf[v - i : v]) / i for i in range(1, v + 1)] or [0])
    return tail + 2 * m * mpmath.mpf(delta) * alpha


@pytest.mark.parametrize("r", [1, 10, 1000])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_all_correct_without_delta_has_a_closed_form(r, confidence):
    # P[Bin(r, q) >= r] = q^r = 1 - c  ⇒  ε = logit((1 - c)^(1/r))
    expected = special.logit((1 - confidence) ** (1 / r))
    result = epsilon_one_run(2 * r, r, r, delta=0.0, confidence=confidence)
    assert result.epsilon == pytest.approx(max(expected, 0.0), abs=1e-8)


@pytest.mark.parametrize(
    ("m", "r", "v", "delta"),
    [(100, 60, 45, 0.0), (100, 60, 45, 1e-3), (500, 200, 150, 1e-5), (50, 50, 40, 1e-2), (1000, 30, 30, 1e-4)],
)
def test_bound_is_the_boundary_of_the_exact_p_value(m, r, v, delta):
    level = 0.05
    epsilon = epsilon_one_run(m, r, v, delta=delta).epsilon
    assert epsilon > 0
    assert p_value_mpmath(epsilon, m, r, v, delta) <= level  # rejected: a valid bound
    assert p_value_mpmath(epsilon + 1e-6, m, r, v, delta) > level  # and the largest one


def test_delta_term_only_lowers_the_bound():
    without = epsilon_one_run(1000, 500, 400, delta=0.0).epsilon
    with_delta = [epsilon_one_run(1000, 500, 400, delta=d).epsilon for d in (1e-8, 1e-5, 1e-3)]
    assert without >= with_delta[0] >= with_delta[1] >= with_delta[2]


def test_coverage_on_randomized_response():
    # each guess is right with probability e^ε/(1+e^ε): exactly ε-DP randomized response
    epsilon, m = 1.0, 1000
    rng = np.random.default_rng(4)
    q = 1 / (1 + math.exp(-epsilon))
    correct = rng.binomial(m, q, TRIALS)
    exceed = sum(epsilon_one_run(m, m, int(v), delta=0.0).epsilon > epsilon for v in correct)
    assert exceed <= ALLOWED
    null = rng.binomial(m, 0.5, TRIALS)
    assert sum(epsilon_one_run(m, m, int(v), delta=1e-5).epsilon > 0 for v in null) <= ALLOWED


def test_sweep_is_the_best_of_bonferroni_corrected_tests():
    rng = np.random.default_rng(5)
    member = rng.random(2000) < 0.5
    scores = member * 1.5 + rng.normal(0, 1, 2000)
    sizes = [50, 200, 800, 2000]
    result = epsilon_one_run_sweep(scores, member, num_guesses=sizes, delta=1e-5)
    order = np.argsort(-scores, kind="stable")
    expected = []
    for r in sizes:
        top, bottom = order[: r // 2], order[len(order) - (r - r // 2) :]
        v = int(member[top].sum() + (~member[bottom]).sum())
        expected.append(epsilon_one_run(2000, r, v, delta=1e-5, confidence=1 - 0.05 / 4).epsilon)
    assert result.epsilon == pytest.approx(max(expected), abs=1e-9)
    assert [c[3] for c in result.candidates] == pytest.approx(expected, abs=1e-9)
    assert result.num_tests == 4 and result.valid


def test_sweep_coverage_with_randomized_response_scores():
    epsilon, m, trials = 1.0, 500, 300
    rng = np.random.default_rng(6)
    q = 1 / (1 + math.exp(-epsilon))
    exceed = 0
    for _ in range(trials):
        member = rng.random(m) < 0.5
        response = np.where(rng.random(m) < q, member, ~member)  # ε-DP per canary
        scores = response + rng.random(m) * 1e-3  # random tie-breaking
        exceed += epsilon_one_run_sweep(scores, member, delta=0.0).epsilon > epsilon
    assert exceed <= stats.binom.ppf(0.999, trials, 0.05)


def test_large_audits_stay_finite():
    result = epsilon_one_run(100_000, 100_000, 99_000, delta=1e-5)
    assert np.isfinite(result.epsilon) and result.epsilon > 3


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: epsilon_one_run(0, 0, 0, delta=0.0), "`num_canaries`"),
        (lambda: epsilon_one_run(10, 11, 0, delta=0.0), r"`num_guesses` must be an integer in \[0, 10\]"),
        (lambda: epsilon_one_run(10, 5, 6, delta=0.0), r"`num_correct` must be an integer in \[0, 5\]"),
        (lambda: epsilon_one_run(10, 5, -1, delta=0.0), "`num_correct`"),
        (lambda: epsilon_one_run(10, 5, 3, delta=1.0), r"`delta` must be in \[0, 1\)"),
        (lambda: epsilon_one_run(10, 5, 3, delta=0.0, confidence=1.5), "`confidence`"),
        (lambda: epsilon_one_run_sweep([1.0, 2.0], [True], delta=0.0), "`is_member`"),
        (lambda: epsilon_one_run_sweep([1.0, 2.0], [True, False], num_guesses=[3], delta=0.0), "`num_guesses`"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 400),
    data=st.data(),
    confidences=st.tuples(st.floats(0.5, 0.999), st.floats(0.5, 0.999)),
    delta=st.sampled_from([0.0, 1e-6, 1e-3]),
)
def test_more_correct_guesses_never_lower_and_more_confidence_never_raises(m, data, confidences, delta):
    r = data.draw(st.integers(0, m))
    v = data.draw(st.integers(0, max(r - 1, 0)))
    low, high = sorted(confidences)
    base = epsilon_one_run(m, r, v, delta=delta, confidence=low).epsilon
    if r > v:
        assert epsilon_one_run(m, r, v + 1, delta=delta, confidence=low).epsilon >= base - 1e-9
    assert epsilon_one_run(m, r, v, delta=delta, confidence=high).epsilon <= base + 1e-9


def test_pure_epsilon_in_closed_form_matches_the_root_search_at_delta_zero():
    from privaudit.stats.one_run import epsilon_one_run_pure

    pairs = [(r, v) for r in (1, 7, 40, 255, 1000) for v in sorted({0, 1, r // 2, (3 * r) // 4, r - 1, r}) if 0 <= v <= r]
    made, right = np.array(pairs).T
    closed = epsilon_one_run_pure(made, right, confidence=0.9)
    searched = [epsilon_one_run(max(r, 1), r, v, delta=0.0, confidence=0.9).epsilon for r, v in pairs]
    assert np.allclose(closed, searched, atol=1e-7)
    # and the defining equation: at q = e^ε/(1 + e^ε), P[Bin(r, q) >= v] is the level 0.1 wherever ε > 0
    positive = closed > 0
    q = 1 / (1 + np.exp(-closed[positive]))
    assert np.allclose(stats.binom.sf(right[positive] - 1, made[positive], q), 0.1, rtol=1e-6)
    with pytest.raises(ValueError, match="num_correct"):
        epsilon_one_run_pure([5], [6])
