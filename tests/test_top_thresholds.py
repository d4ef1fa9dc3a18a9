"""The pruned threshold ranking returns exactly what scoring every candidate and sorting returns.

Oracle: each candidate scored in the test with scipy's beta quantiles (the
Clopper–Pearson upper bounds) and the family's parameter, then a stable
sort, as the ranking did before it learned to skip blocks.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit.stats.bounds import _rank_thresholds
from privaudit.stats.families import EpsilonDelta, GaussianDP
from privaudit.stats.thresholds import candidate_thresholds, error_counts, top_thresholds


def clopper_pearson_upper(k, n, level):
    k = np.asarray(k, dtype=np.float64)
    return np.where(k >= n, 1.0, stats.beta.ppf(level, k + 1, np.maximum(n - k, 1e-300)))


def reference_ranking(proxy, in_sorted, out_sorted, confidence, eval_sizes=None):
    candidates = candidate_thresholds(in_sorted, out_sorted)
    fp = np.array([np.count_nonzero(out_sorted >= t) for t in candidates])
    fn = np.array([np.count_nonzero(in_sorted < t) for t in candidates])
    level = 1.0 - (1.0 - confidence) / 2.0
    fpr, fnr = clopper_pearson_upper(fp, out_sorted.size, level), clopper_pearson_upper(fn, in_sorted.size, level)
    if eval_sizes is not None:
        n_in, n_out = eval_sizes
        fpr, fnr = clopper_pearson_upper(fpr * n_out, n_out, level), clopper_pearson_upper(fnr * n_in, n_in, level)
    return candidates[np.argsort(-proxy.parameter_from_errors(fpr, fnr), kind="stable")]


def draws(seed):
    rng = np.random.default_rng(seed)
    yield rng.normal(2.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000)  # well separated
    yield rng.normal(0.0, 1.0, 1500), rng.normal(0.0, 1.0, 2500)  # null: scores tie at 0 after clipping
    yield np.round(rng.normal(1.0, 1.0, 3000), 1), np.round(rng.normal(0.0, 1.0, 3000), 1)  # discrete, many ties
    yield rng.exponential(1.0, 800) + 3.0, rng.exponential(1.0, 5000)  # one-sided tails


@pytest.mark.parametrize("proxy", [GaussianDP(1e-5), EpsilonDelta(1e-5), EpsilonDelta(0.0)], ids=["gdp", "eps-delta", "pure"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_ranking_is_the_full_sort_cut_to_count(proxy, seed):
    for in_scores, out_scores in draws(seed):
        in_sorted, out_sorted = np.sort(in_scores), np.sort(out_scores)
        for confidence, eval_sizes in ((0.95, None), (0.95 / 16 + 1 - 1 / 16, (4 * in_sorted.size, 4 * out_sorted.size))):
            expected = reference_ranking(proxy, in_sorted, out_sorted, confidence, eval_sizes)
            for count in (1, 16):
                np.testing.assert_array_equal(_rank_thresholds(proxy, in_sorted, out_sorted, confidence, count, eval_sizes), expected[:count])


def test_top_thresholds_keeps_ties_in_index_order_and_bounds_few_thresholds():
    fp, fn = np.arange(5000)[::-1], np.arange(5000)
    bounded = []

    def bounds_of(false_positives, false_negatives):
        bounded.append(false_positives.size)
        return false_positives, false_negatives

    def score(false_positives, false_negatives):
        return -np.abs(false_positives - false_negatives).astype(float) // 4  # plateaus of equal scores around index 2500

    expected = np.argsort(-score(fp, fn), kind="stable")[:7]
    np.testing.assert_array_equal(top_thresholds(bounds_of, score, fp, fn, 7), expected)
    assert sum(bounded) < 500  # the ends of 157 runs, then of the runs near the top, then what is left


def test_error_counts_fall_and_rise_along_the_candidates():
    # the pruning rests on this order: false positives never rise, false negatives never fall
    rng = np.random.default_rng(3)
    in_sorted, out_sorted = np.sort(np.round(rng.normal(1, 1, 9000), 2)), np.sort(np.round(rng.normal(0, 1, 9000), 2))
    fp, fn = error_counts(in_sorted, out_sorted, candidate_thresholds(in_sorted, out_sorted))
    assert np.all(np.diff(fp) <= 0) and np.all(np.diff(fn) >= 0)


def test_null_scores_tied_at_zero_keep_the_first_thresholds_and_bound_few():
    fp, fn = np.arange(4000)[::-1], np.arange(4000)
    bounded = []

    def bounds_of(false_positives, false_negatives):
        bounded.append(false_positives.size)
        return false_positives, false_negatives

    def clipped(false_positives, false_negatives):
        return np.maximum(-np.abs(false_positives - false_negatives) / 4000.0 - 0.5, 0.0)  # every threshold scores 0, as μ on null data

    for count in (1, 16):
        bounded.clear()
        np.testing.assert_array_equal(top_thresholds(bounds_of, clipped, fp, fn, count), np.arange(count))
        assert sum(bounded) < 600
