"""Validity of the mechanism tester with its learned statistics and its pair search: Monte Carlo coverage at the true ε.

Each trial draws fresh samples of a mechanism whose true ε is known in
closed form, so a valid 95% lower bound exceeds it in at most 5% of trials:
over ``TRIALS`` = 500 trials, at most the count that Bin(500, 0.05) exceeds
with probability < 0.001 (a truly valid bound fails with probability < 0.001).
Budgets are small so that the 500 trials stay cheap; validity does not
depend on the budget.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from privaudit.audits.mechanism.audit import audit_mechanism
from privaudit.mechanisms.claims import Claim
from privaudit.mechanisms.learned import fit_density_ratio
from privaudit.mechanisms.tester import bound_samples

TRIALS = 500
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))


def _two_bin_histogram(counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    # two counts, Laplace noise of scale 2 each: moving one record between the bins is exactly 1-DP (each coordinate's loss is at most 1/2)
    return counts + rng.laplace(0.0, 2.0, (size, 2))


def test_learned_statistics_keep_the_bound_below_the_true_epsilon():
    # the classifier and the density ratio are fitted on pilot samples only; every test, learned ones included, Bonferroni-corrected
    claim = Claim(epsilon=1.0)
    d, d_prime = np.array([3.0, 1.0]), np.array([2.0, 2.0])
    over, names = 0, set()
    for trial in range(TRIALS):
        rng = np.random.default_rng([7, trial])
        outcome = bound_samples(
            _two_bin_histogram(d, 200, rng),
            _two_bin_histogram(d_prime, 200, rng),
            _two_bin_histogram(d, 300, rng),
            _two_bin_histogram(d_prime, 300, rng),
            claim=claim,
            seed=trial,
        )
        names |= {name for name, _, _ in outcome.tried}
        over += outcome.epsilon > 1.0
    assert {"density-ratio", "classifier", "linear"} <= names
    assert over <= ALLOWED, over


def test_the_searched_pair_keeps_the_bound_below_the_true_epsilon():
    # a Laplace sum of records clipped to [0, 1], scale 1: exactly 1-DP for every add/remove pair, whatever D and D' the search tries
    def laplace_sum(dataset, size, rng):
        return np.clip(dataset, 0.0, 1.0).sum() + rng.laplace(0.0, 1.0, size)

    dataset = np.linspace(0.0, 1.0, 5)
    budget = {"samples": 150, "pilot_samples": 60, "search_samples": 40, "search_random": 1, "search_steps": 2}
    bounds = [audit_mechanism(laplace_sum, dataset, epsilon=1.0, relation="add-remove", seed=trial, **budget).epsilon for trial in range(TRIALS)]
    assert sum(bound > 1.0 for bound in bounds) <= ALLOWED


def test_density_ratio_selects_the_coordinates_that_moved_and_is_monotone_in_each():
    # the replace-one histogram: bins 0 and 1 move; the Laplace log-ratio of a shifted coordinate is monotone (clipped linear, closed form)
    rng = np.random.default_rng(3)
    base = np.zeros(6)
    moved = base + np.array([1.0, -1.0, 0, 0, 0, 0])
    ratio = fit_density_ratio(base + rng.laplace(0, 1, (2000, 6)), moved + rng.laplace(0, 1, (2000, 6)))
    assert set(ratio.coordinates) == {0, 1}
    first, second = (np.asarray(ratio.log_ratios[ratio.coordinates.index(j)]) for j in (0, 1))
    assert np.all(np.diff(first) <= 1e-12) and np.all(np.diff(second) >= -1e-12)  # D is lower in bin 0, higher in bin 1
    # the plateaus reach about ±1, the true ratio's range (ε = 1 per coordinate)
    assert 0.7 < -first[-1] < 1.3 and 0.7 < second[-1] < 1.3
