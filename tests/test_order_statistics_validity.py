"""Monte Carlo validity of the order-statistics one-run test, one family at a time.

Each test plays 1,000 one-run games at the family's true parameter (fair
coins, independent canaries, the Bayes guesser releasing its r most
confident guesses) and counts how often the 95% bound lands above the
truth, i.e. how often the true null is rejected. Valid means at most 5%,
plus Monte Carlo slack: P[Bin(1000, 0.05) > 73] < 0.001. The null games
(scores carry nothing about the coins) must give 0 in at least 95% of
games, with the same slack. The bound is a function of the mistake count
alone, so each distinct count is tested once.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from privaudit.stats.families import EpsilonDelta, GaussianDP
from privaudit.stats.one_run_nulls import DPSGD, LaplaceDP, SubsampledGaussianDP
from privaudit.stats.order_statistics import order_statistics_bound, order_statistics_p_value

GAMES, CANARIES, GUESSES, DELTA = 1_000, 500, 100, 1e-5
ALLOWED = int(stats.binom.ppf(0.999, GAMES, 0.05))  # 73


def _mistakes(loss: np.ndarray, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Mistakes among the r largest |ℓ| per game (ties broken at random), guessing "in" when ℓ > 0."""
    key = np.abs(loss) + 1e-9 * rng.random(loss.shape)  # random order inside an atom of |ℓ|
    top = np.argpartition(-key, GUESSES - 1, axis=1)[:, :GUESSES]
    guess_in = np.where(loss > 0, True, np.where(loss < 0, False, rng.random(loss.shape) < 0.5))
    return np.asarray(np.take_along_axis(guess_in != bits, top, axis=1).sum(axis=1))


def _gdp(rng: np.random.Generator, bits: np.ndarray, mu: float) -> np.ndarray:
    return mu * (bits * mu + rng.normal(size=bits.shape)) - mu * mu / 2


def _subsampled(q: float, sigma: float, steps: int) -> Callable[[np.random.Generator, np.ndarray], np.ndarray]:
    def loss(rng: np.random.Generator, bits: np.ndarray) -> np.ndarray:
        shape = (*bits.shape, steps)
        x = (bits[..., None] & (rng.random(shape) < q)) + sigma * rng.normal(size=shape)
        return np.asarray(np.logaddexp(math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * sigma * sigma)).sum(axis=-1))

    return loss


def _laplace(rng: np.random.Generator, bits: np.ndarray, epsilon: float) -> np.ndarray:
    x = bits * epsilon + rng.laplace(size=bits.shape)
    return np.abs(x) - np.abs(x - epsilon)


def _eps_delta(rng: np.random.Generator, bits: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    reveal = rng.random(bits.shape) < delta
    honest = rng.random(bits.shape) < 1 / (1 + math.exp(-epsilon))  # randomised response
    said_in = np.where(honest, bits, ~bits)
    return np.where(reveal, np.where(bits, np.inf, -np.inf), np.where(said_in, epsilon, -epsilon))


CASES = {
    "gdp": (GaussianDP(DELTA), 1.0, lambda rng, bits: _gdp(rng, bits, 1.0)),
    "subsampled-gaussian": (SubsampledGaussianDP(0.2, DELTA), 2.0, _subsampled(0.2, 0.5, 1)),
    "dpsgd": (DPSGD(0.5, 3, DELTA, discretization=1e-3), 1.0, _subsampled(0.5, 1.0, 3)),
    "laplace": (LaplaceDP(DELTA), 2.0, lambda rng, bits: _laplace(rng, bits, 2.0)),
    "eps-delta": (EpsilonDelta(1e-2), 2.0, lambda rng, bits: _eps_delta(rng, bits, 2.0, 1e-2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bound_exceeds_truth_in_at_most_five_percent(name: str) -> None:
    null, leak, loss = CASES[name]
    rng = np.random.default_rng(list(CASES).index(name))
    bits = rng.random((GAMES, CANARIES)) < 0.5
    mistakes = _mistakes(loss(rng, bits), bits, rng)
    rejected = {
        int(u): order_statistics_p_value(null, leak, num_canaries=CANARIES, num_guesses=GUESSES, num_correct=GUESSES - int(u)) < 0.05
        for u in np.unique(mistakes)
    }
    above = sum(rejected[int(u)] for u in mistakes)
    assert above <= ALLOWED
    # and the test has power: most games refute a null a good deal more private than the truth
    typical = int(np.median(mistakes))
    bound = order_statistics_bound(null, num_canaries=CANARIES, num_guesses=GUESSES, num_correct=GUESSES - typical)
    assert 0.3 * null.epsilon(leak) < bound.epsilon <= null.epsilon(leak)


@pytest.mark.parametrize("name", list(CASES))
def test_null_games_give_zero(name: str) -> None:
    null, _, _ = CASES[name]
    rng = np.random.default_rng(7)
    bits = rng.random((GAMES, CANARIES)) < 0.5
    unrelated = rng.random((GAMES, CANARIES)) < 0.5  # the scores see other coins
    mistakes = _mistakes(np.where(unrelated, 1.0, -1.0) * rng.random((GAMES, CANARIES)), bits, rng)
    bounds = {
        int(u): order_statistics_bound(null, num_canaries=CANARIES, num_guesses=GUESSES, num_correct=GUESSES - int(u)).epsilon for u in np.unique(mistakes)
    }
    positive = sum(bounds[int(u)] > 0.0 for u in mistakes)
    assert positive <= ALLOWED
