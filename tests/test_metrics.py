"""Membership-inference metrics against brute-force threshold loops and pair counting."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privaudit import precision_at_recall, roc_auc, roc_curve, tpr_at_fpr
from privaudit.stats.metrics import auc_null_margin

scores = st.lists(st.integers(-4, 4), min_size=1, max_size=30)


def brute_force_points(in_scores, out_scores):
    """(threshold, fpr, tpr, precision) for every distinct score, by direct counting."""
    points = []
    for t in sorted(set(in_scores) | set(out_scores), reverse=True):
        tp = sum(s >= t for s in in_scores)
        fp = sum(s >= t for s in out_scores)
        points.append((t, fp / len(out_scores), tp / len(in_scores), tp / (tp + fp)))
    return points


@settings(max_examples=80, deadline=None)
@given(in_scores=scores, out_scores=scores)
def test_roc_curve_matches_threshold_loop(in_scores, out_scores):
    curve = roc_curve(in_scores, out_scores)
    points = brute_force_points(in_scores, out_scores)
    assert curve.thresholds[0] == np.inf and (curve.fpr[0], curve.tpr[0]) == (0.0, 0.0)
    assert curve.thresholds[1:].tolist() == [p[0] for p in points]
    assert curve.fpr[1:] == pytest.approx([p[1] for p in points])
    assert curve.tpr[1:] == pytest.approx([p[2] for p in points])
    assert (curve.fpr[-1], curve.tpr[-1]) == (1.0, 1.0)


@settings(max_examples=80, deadline=None)
@given(in_scores=scores, out_scores=scores)
def test_auc_matches_pair_counting(in_scores, out_scores):
    wins = sum((a > b) + 0.5 * (a == b) for a in in_scores for b in out_scores)
    assert roc_auc(in_scores, out_scores) == pytest.approx(wins / (len(in_scores) * len(out_scores)))
    # and the trapezoidal area under the step curve with ties as diagonal segments
    curve = roc_curve(in_scores, out_scores)
    assert roc_auc(in_scores, out_scores) == pytest.approx(np.trapezoid(curve.tpr, curve.fpr))


@settings(max_examples=80, deadline=None)
@given(in_scores=scores, out_scores=scores, target=st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]))
def test_tpr_at_fpr_and_precision_at_recall_match_the_loop(in_scores, out_scores, target):
    points = brute_force_points(in_scores, out_scores)
    best_tpr = max([0.0] + [tpr for _, fpr, tpr, _ in points if fpr <= target])
    assert tpr_at_fpr(in_scores, out_scores, [target])[0] == pytest.approx(best_tpr)
    best_precision = max(precision for _, _, tpr, precision in points if tpr >= target)
    assert precision_at_recall(in_scores, out_scores, [target])[0] == pytest.approx(best_precision)


def test_gaussian_closed_forms():
    # N(μ, 1) vs N(0, 1): AUC = Φ(μ/√2), TPR at FPR a = Φ(μ - Φ⁻¹(1 - a))
    # CLT: sd(AUC) ~ sqrt((n+m+1)/(12nm)) ~ 0.0009 (Mann-Whitney variance), so 0.004 is > 4 sd;
    # sd(TPR@1%) ~ 0.001 from TPR plus 6.2 x 2.2e-4 from the FPR quantile ~ 0.0017, so 0.01 is > 5 sd.
    rng = np.random.default_rng(0)
    mu, n = 1.0, 200_000
    in_scores, out_scores = rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)
    assert roc_auc(in_scores, out_scores) == pytest.approx(stats.norm.cdf(mu / np.sqrt(2)), abs=0.004)
    expected = stats.norm.cdf(mu - stats.norm.isf([0.01, 0.1]))
    assert tpr_at_fpr(in_scores, out_scores, [0.01, 0.1]) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(("num_in", "num_out", "confidence"), [(3, 4, 0.95), (5, 2, 0.9), (4, 6, 0.99)])
def test_auc_null_margin_is_z_times_the_exact_null_sd(num_in, num_out, confidence):
    # under no signal every split of the ranks 0..n-1 into members and non-members is equally likely: enumerate them all
    ranks = range(num_in + num_out)
    aucs = [roc_auc(list(members), [r for r in ranks if r not in members]) for members in itertools.combinations(ranks, num_in)]
    assert np.mean(aucs) == pytest.approx(0.5, abs=1e-12)
    assert auc_null_margin(num_in, num_out, confidence) == pytest.approx(stats.norm.isf((1 - confidence) / 2) * np.std(aucs), rel=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: roc_auc([], [1.0]), "`in_scores`"),
        (lambda: roc_curve([1.0], [np.inf]), "`out_scores`"),
        (lambda: tpr_at_fpr([1.0], [0.0], [1.5]), "`fpr`"),
        (lambda: precision_at_recall([1.0], [0.0], [-0.1]), "`recall`"),
        (lambda: auc_null_margin(1, 0), "`num_out`"),
        (lambda: auc_null_margin(1, 1, 1.0), "`confidence`"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
