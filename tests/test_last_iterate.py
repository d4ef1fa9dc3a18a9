"""The last-iterate heuristic (Steinke et al. 2024) against closed forms and mpmath, and its pair as an order-statistics null.

Independent numbers: at q = 1 the pair is the Gaussian mechanism with
μ = √T/σ (Balle and Wang's closed form, ``gdp_delta``); for q < 1 the
hockey-stick divergences of both directions by mpmath quadrature at 30
digits, split at the one crossing of the densities (found by mpmath
bisection, not by the code under test). Monte Carlo: 1,000 one-run games at
the true σ reject the true null in at most 5% plus slack, and games whose
scores carry nothing give 0 in at least 95%.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from privaudit.stats.conversions import gaussian_epsilon, gdp_delta, gdp_epsilon
from privaudit.stats.last_iterate import LastIterateDP, _pair, last_iterate_delta, last_iterate_epsilon, last_iterate_heuristic
from privaudit.stats.order_statistics import order_statistics_bound, order_statistics_p_value

mpmath.mp.dps = 30


@pytest.mark.parametrize("sigma, steps", [(1.0, 4), (2.0, 9), (0.5, 1), (10.8116, 100)])
def test_canary_in_every_step_is_the_gaussian_mechanism(sigma, steps):
    mu = math.sqrt(steps) / sigma
    for epsilon in (0.0, 0.5, 2.0, 5.0):
        assert last_iterate_delta(sigma, sampling_prob=1.0, num_steps=steps, epsilon=epsilon) == pytest.approx(gdp_delta(epsilon, mu), rel=1e-9, abs=1e-300)
    expected = gdp_epsilon(mu, 1e-5)
    assert last_iterate_epsilon(sigma, sampling_prob=1.0, num_steps=steps, delta=1e-5) == pytest.approx(expected, rel=1e-7)
    assert last_iterate_epsilon(sigma, sampling_prob=1.0, num_steps=steps, delta=1e-5) >= expected  # rounded up


def _mp_deltas(sigma: float, q: float, steps: int, epsilon: float) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Both hockey-stick divergences of Binomial(T, q) + N(0, Tσ²) against N(0, Tσ²), by quadrature in mpmath."""
    scale = mpmath.sqrt(steps) * sigma
    weights = [mpmath.binomial(steps, k) * mpmath.mpf(q) ** k * (1 - mpmath.mpf(q)) ** (steps - k) for k in range(steps + 1)]

    def out(x):
        return mpmath.npdf(x, 0, scale)

    def inside(x):
        return mpmath.fsum(w * mpmath.npdf(x, k, scale) for k, w in enumerate(weights))

    def crossing(f):  # the one sign change of f (the likelihood ratio is monotone), by bisection
        low, high = mpmath.mpf(-60) * scale - 60, mpmath.mpf(60) * scale + steps + 60
        if f(low) * f(high) > 0:
            return None
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (middle, high) if f(middle) * f(low) > 0 else (low, middle)
        return (low + high) / 2

    e = mpmath.e ** mpmath.mpf(epsilon)
    first = crossing(lambda x: inside(x) - e * out(x))
    remove = mpmath.quad(lambda x: inside(x) - e * out(x), [first, first + 5 * scale, first + 20 * scale + steps, mpmath.inf])
    second = crossing(lambda x: out(x) - e * inside(x))
    add = mpmath.mpf(0) if second is None else mpmath.quad(lambda x: out(x) - e * inside(x), [-mpmath.inf, second - 20 * scale, second - 5 * scale, second])
    return remove, add


@pytest.mark.parametrize("sigma, q, steps", [(1.0, 0.3, 3), (0.7, 0.1, 5), (2.0, 0.5, 4), (0.5, 0.05, 6)])
@pytest.mark.parametrize("epsilon", [0.3, 1.5])
def test_delta_matches_mpmath_quadrature_of_both_directions(sigma, q, steps, epsilon):
    remove, add = _mp_deltas(sigma, q, steps, epsilon)
    expected = float(max(remove, add, 0))
    assert last_iterate_delta(sigma, sampling_prob=q, num_steps=steps, epsilon=epsilon) == pytest.approx(expected, rel=1e-8, abs=1e-15)


def test_epsilon_inverts_delta_and_rounds_up():
    for sigma, q, steps in [(1.0, 0.3, 3), (0.8, 0.05, 100)]:
        epsilon = last_iterate_epsilon(sigma, sampling_prob=q, num_steps=steps, delta=1e-5)
        assert last_iterate_delta(sigma, sampling_prob=q, num_steps=steps, epsilon=epsilon) <= 1e-5
        assert last_iterate_delta(sigma, sampling_prob=q, num_steps=steps, epsilon=epsilon * (1 - 1e-6)) > 1e-5


@pytest.mark.parametrize("sigma, q, steps", [(0.86, 0.05, 100), (2.0, 0.5, 20), (5.0, 1.0, 50)])
def test_the_heuristic_never_exceeds_the_composed_accountant(sigma, q, steps):
    """The final model is a post-processing of the transcript: the heuristic's ε is at most DP-SGD's accountant's."""
    heuristic = last_iterate_heuristic(sigma, sampling_prob=q, num_steps=steps, delta=1e-5)
    assert heuristic.kind == "heuristic" and "not a bound" in heuristic.what
    assert heuristic.epsilon <= gaussian_epsilon(sigma, 1e-5, sampling_prob=q, num_steps=steps) * (1 + 1e-3)
    if q <= 0.05:  # rare sampling: the last iterate leaks far less (Steinke et al.'s Figure 1)
        assert heuristic.epsilon < 0.9 * gaussian_epsilon(sigma, 1e-5, sampling_prob=q, num_steps=steps)


@pytest.mark.parametrize("threshold", [0.0, 0.4, 2.0, 6.0])
def test_error_curve_matches_mpmath_at_a_threshold(threshold):
    """(s, E) at |ℓ| > c: the mixture mass there and the Bayes guesser's error mass, by quadrature between the cuts."""
    sigma, q, steps = 0.8, 0.3, 4
    pair = _pair(q, steps, sigma)
    s, errors = pair.curve(np.array([threshold]))
    scale = mpmath.sqrt(steps) * sigma
    weights = [mpmath.binomial(steps, k) * mpmath.mpf(q) ** k * (1 - mpmath.mpf(q)) ** (steps - k) for k in range(steps + 1)]

    def loss(x):
        return mpmath.log(mpmath.fsum(w * mpmath.npdf(x, k, scale) for k, w in enumerate(weights)) / mpmath.npdf(x, 0, scale))

    def root(level):
        low, high = mpmath.mpf(-200), mpmath.mpf(200)
        if loss(low) > level:
            return -mpmath.inf
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (middle, high) if loss(middle) < level else (low, middle)
        return (low + high) / 2

    upper, lower = root(threshold), root(-threshold)
    in_above = mpmath.fsum(w * (1 - mpmath.ncdf(upper, k, scale)) for k, w in enumerate(weights))
    out_above = 1 - mpmath.ncdf(upper, 0, scale)
    in_below = mpmath.fsum(w * mpmath.ncdf(lower, k, scale) for k, w in enumerate(weights))
    out_below = mpmath.ncdf(lower, 0, scale)
    assert float(s[0]) == pytest.approx(float((in_above + out_above + in_below + out_below) / 2), rel=1e-9)
    assert float(errors[0]) == pytest.approx(float((out_above + in_below) / 2), rel=1e-9, abs=1e-300)


def test_null_at_q_1_is_the_gdp_null():
    """At q = 1, |ℓ| > c is |x - μ/2| > c/μ in units of √T σ: the GDP curve in closed form."""
    from scipy.special import ndtr

    for sigma, steps in ((2.0, 4), (0.5, 9)):
        mu = math.sqrt(steps) / sigma
        thresholds = np.array([0.0, 0.3, 1.0, 4.0, 12.0])
        s, errors = _pair(1.0, steps, sigma).curve(thresholds)
        t = thresholds / mu
        assert np.allclose(s, ndtr(-t - mu / 2) + ndtr(-t + mu / 2), rtol=1e-10, atol=1e-300)
        assert np.allclose(errors, ndtr(-t - mu / 2), rtol=1e-10, atol=1e-300)
        assert LastIterateDP(1.0, steps, 1e-5).epsilon(1.0 / sigma) == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-7)


GAMES, CANARIES, GUESSES = 1_000, 500, 100
ALLOWED = int(stats.binom.ppf(0.999, GAMES, 0.05))  # 66: P[Bin(1000, 0.05) > 66] < 0.001


def _games(rng, bits, sigma, q, steps):
    counts = rng.binomial(steps, q, size=bits.shape)
    return bits * counts + rng.normal(0.0, math.sqrt(steps) * sigma, size=bits.shape)


def test_order_statistics_against_the_pair_is_valid_at_the_true_sigma():
    """1,000 games at the true σ: the Bayes guesser (ℓ increases in the score) releases its r most confident guesses."""
    sigma, q, steps = 1.0, 0.2, 10
    null = LastIterateDP(q, steps, 1e-5)
    rng = np.random.default_rng(7)
    bits = rng.random((GAMES, CANARIES)) < 0.5
    loss = _pair(q, steps, sigma).loss(_games(rng, bits, sigma, q, steps).ravel()).reshape(bits.shape)
    top = np.argpartition(-np.abs(loss), GUESSES - 1, axis=1)[:, :GUESSES]
    mistakes = np.take_along_axis((loss > 0) != bits, top, axis=1).sum(axis=1)
    p_values = {
        int(u): order_statistics_p_value(null, 1.0 / sigma, num_canaries=CANARIES, num_guesses=GUESSES, num_correct=GUESSES - int(u))
        for u in np.unique(mistakes)
    }
    rejected = sum(p_values[int(u)] < 0.05 for u in mistakes)  # the true σ rejected: the bound lands above the truth
    assert rejected <= ALLOWED, rejected
    assert rejected >= 10  # not vacuous: the test has power at the truth (about 5% of games)


def test_scores_that_carry_nothing_give_zero_in_95_percent_of_games():
    null = LastIterateDP(0.2, 10, 1e-5)
    rng = np.random.default_rng(8)
    bits = rng.random((GAMES, CANARIES)) < 0.5
    scores = rng.normal(size=bits.shape)  # a model trained without the canaries
    top = np.argpartition(-np.abs(scores), GUESSES - 1, axis=1)[:, :GUESSES]
    mistakes = np.take_along_axis((scores > 0) != bits, top, axis=1).sum(axis=1)
    low = null.leak_range[0]  # the bound is 0 exactly when the least leak searched is not rejected
    zero = {
        int(u): order_statistics_p_value(null, low, num_canaries=CANARIES, num_guesses=GUESSES, num_correct=GUESSES - int(u)) >= 0.05
        for u in np.unique(mistakes)
    }
    worst = int(max(mistakes.min(), 0))
    assert zero[worst] == (order_statistics_bound(null, num_canaries=CANARIES, num_guesses=GUESSES, num_correct=GUESSES - worst).epsilon == 0.0)
    assert sum(zero[int(u)] for u in mistakes) >= GAMES - ALLOWED


@pytest.mark.parametrize("bad, message", [({"sampling_prob": 0.0}, "`sampling_prob` must be in (0, 1]"), ({"num_steps": 0}, "`num_steps`")])
def test_bad_input_names_the_argument(bad, message):
    arguments = {"sampling_prob": 0.1, "num_steps": 10, "delta": 1e-5} | bad
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[").replace("]", r"\]")):
        last_iterate_heuristic(1.0, **arguments)
