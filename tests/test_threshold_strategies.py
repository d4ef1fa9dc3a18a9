"""Thresholds at ranks fixed in advance, and the median of several splits: coverage, ties and oracles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit import Bonferroni, epsilon_lower_bound, gdp_epsilon
from privaudit.stats.thresholds import MultiSplit, rank_grid

TRIALS = 200
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))  # 21
DELTA = 1e-5


def gaussian_pair(mu: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


@pytest.mark.parametrize("strategy", [Bonferroni(over="ranks"), Bonferroni(over="all"), MultiSplit(num_splits=5)], ids=repr)
@pytest.mark.parametrize(("method", "mu"), [("gdp", 0.0), ("gdp", 1.0), ("eps-delta", 2.0)])
def test_coverage_on_the_gaussian_mechanism(strategy, method, mu):
    truth = float(gdp_epsilon(mu, DELTA)) if mu > 0 else 0.0  # N(μ,1) vs N(0,1) is exactly μ-GDP
    bounds = np.array(
        [epsilon_lower_bound(*gaussian_pair(mu, 400, seed), delta=DELTA, method=method, threshold=strategy, seed=seed).epsilon for seed in range(TRIALS)]
    )
    assert np.count_nonzero(bounds > truth) <= ALLOWED
    if mu > 0:
        assert np.median(bounds) > 0.2 * truth  # (ε, δ) at δ = 1e-5 on 400 a side reaches about a quarter


def test_rank_thresholds_with_ties_cover_randomized_response():
    # scores 0/1 from randomized response with ε = 1: every threshold ties; the coin ordering keeps it exact
    epsilon, n = 1.0, 300
    keep = np.exp(epsilon) / (1 + np.exp(epsilon))
    bounds = []
    for seed in range(TRIALS):
        rng = np.random.default_rng(seed)
        in_scores = (rng.random(n) < keep).astype(float)
        out_scores = (rng.random(n) >= keep).astype(float)
        bounds.append(epsilon_lower_bound(in_scores, out_scores, delta=0.0 + 1e-12, method="eps-delta", threshold=Bonferroni(over="ranks"), seed=seed).epsilon)
    assert np.count_nonzero(np.array(bounds) > epsilon) <= ALLOWED
    assert np.median(bounds) > 0.3


def test_rank_thresholds_make_the_counts_they_promise():
    # a threshold just above the j-th highest out-score makes j - 1 false positives; brute force on distinct scores
    in_scores, out_scores = gaussian_pair(1.0, 1000, 3)
    result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=Bonferroni(over="ranks", num_thresholds=8), seed=0)
    assert result.num_tests <= 8
    assert result.false_positives == np.count_nonzero(out_scores >= result.threshold)
    assert result.false_negatives == np.count_nonzero(in_scores < result.threshold)
    assert rank_grid(1000, 4).tolist() == [1, 10, 100, 1000]


def test_multi_split_reports_the_lower_median_of_splits_at_half_the_significance():
    in_scores, out_scores = gaussian_pair(1.0, 2000, 4)
    result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=MultiSplit(num_splits=5), seed=7)
    children = np.random.default_rng(7).spawn(5)
    singles = sorted(epsilon_lower_bound(in_scores, out_scores, delta=DELTA, confidence=0.975, seed=child).epsilon for child in children)
    assert result.epsilon == singles[2] and result.confidence == 0.95 and result.num_tests == 5


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Bonferroni(over="pareto"), "over"),
        (lambda: Bonferroni(over="ranks", num_thresholds=1), "num_thresholds"),
        (lambda: MultiSplit(num_splits=0), "num_splits"),
        (lambda: MultiSplit(fraction=1.0), "fraction"),
    ],
)
def test_bad_strategy_options_name_the_argument(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_rank_thresholds_refuse_the_bayesian_interval():
    in_scores, out_scores = gaussian_pair(1.0, 100, 0)
    with pytest.raises(ValueError, match="threshold"):
        epsilon_lower_bound(in_scores, out_scores, delta=DELTA, interval="bayes", threshold=Bonferroni(over="ranks"))
