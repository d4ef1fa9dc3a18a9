"""RMIA ranked by its log ratio: the same order as the fraction of z dominated wherever that differs, every tie broken, the ROC never worse.

The fraction is recomputed here by brute force from the paper's definition
(LR(x, z) = [Pr(x|θ)/Pr(x)] / [Pr(z|θ)/Pr(z)], one pair at a time), on
signals drawn from a few values so that the fractions tie often.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special

from privaudit.stats.metrics import roc_auc, roc_curve, tpr_at_fpr
from privaudit.stats.mia import rmia_fractions, rmia_fractions_left_out, rmia_log_ratios, rmia_scores

FPRS = np.linspace(0.0, 1.0, 201)


def brute_force_fractions(target, reference, membership, z_target, z_reference, z_membership, gamma):
    """Score(x) = #{z : LR(x, z) >= γ} / m, LR from the online definition, pair by pair."""

    def prior(signals, member):  # ½ (mean over IN + mean over OUT) of the references' p
        p = special.expit(signals)
        return 0.5 * (p[member].mean() + p[~member].mean())

    def ratio(signal, signals, member):
        return special.expit(signal) / prior(signals, member)

    x_ratios = [ratio(target[i], reference[:, i], membership[:, i]) for i in range(target.size)]
    z_ratios = [ratio(z_target[j], z_reference[:, j], z_membership[:, j]) for j in range(z_target.size)]
    return np.array([sum(rx / rz >= gamma * (1 - 1e-12) for rz in z_ratios) / len(z_ratios) for rx in x_ratios])


def coarse_signals(seed, records, references=4):
    """Target signals on a grid of 5 values (hard, vote-like outputs), references continuous; each record IN half of the references."""
    rng = np.random.default_rng(seed)
    member = np.argsort(rng.random((records, references)), axis=1).T < references // 2
    grid = np.array([-3.0, -1.0, 0.0, 1.0, 3.0])
    reference = rng.normal(0.0, 1.5, (references, records))
    is_member = rng.random(records) < 0.5
    target = grid[np.clip(rng.integers(0, 4, records) + is_member, 0, 4)]
    return target, reference, member, is_member


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0])
def test_the_fraction_is_a_non_decreasing_function_of_the_log_ratio_so_no_tie_decides_where_the_ratio_differs(seed, gamma):
    target, reference, member, _ = coarse_signals(seed, 60)
    z_target, z_reference, z_member, _ = coarse_signals(100 + seed, 25)
    fraction = brute_force_fractions(target, reference, member, z_target, z_reference, z_member, gamma)
    assert np.allclose(rmia_scores(target, reference, member, z_target, z_reference, z_member, gamma=gamma), fraction)
    ratio = rmia_log_ratios(target, reference, member)
    for i, j in itertools.permutations(range(target.size), 2):
        if fraction[i] > fraction[j]:  # the ratio keeps every order the fraction makes
            assert ratio[i] > ratio[j]
    # and separates records the fraction ties: most tied pairs differ in the ratio
    tied = [(i, j) for i, j in itertools.combinations(range(target.size), 2) if fraction[i] == fraction[j]]
    assert tied and sum(ratio[i] != ratio[j] for i, j in tied) > 0.5 * len(tied)


@pytest.mark.parametrize("seed", range(10))
def test_ranking_by_the_log_ratio_keeps_every_roc_point_of_the_fraction_and_never_lowers_a_tpr(seed):
    target, reference, member, is_member = coarse_signals(seed, 400)
    z_target, z_reference, z_member, _ = coarse_signals(1000 + seed, 50)
    old = brute_force_fractions(target, reference, member, z_target, z_reference, z_member, 1.0)
    new = rmia_log_ratios(target, reference, member)
    old_curve, new_curve = roc_curve(old[is_member], old[~is_member]), roc_curve(new[is_member], new[~is_member])
    new_points = set(zip(new_curve.fpr.round(12), new_curve.tpr.round(12), strict=True))
    assert set(zip(old_curve.fpr.round(12), old_curve.tpr.round(12), strict=True)) <= new_points
    gain = tpr_at_fpr(new[is_member], new[~is_member], FPRS) - tpr_at_fpr(old[is_member], old[~is_member], FPRS)
    assert (gain >= 0).all() and gain.max() > 0  # never lower, and higher somewhere: the fraction's ties cost TPR here


def test_without_ties_the_log_ratio_gives_the_fractions_roc_exactly():
    rng = np.random.default_rng(7)
    member = np.argsort(rng.random((60, 4)), axis=1).T < 2
    reference, is_member = rng.normal(size=(4, 60)), rng.random(60) < 0.5
    target = rng.normal(size=60) + is_member
    z_reference = rng.normal(size=(4, 200_000))
    z_member = np.argsort(rng.random((200_000, 4)), axis=1).T < 2
    old = rmia_scores(target, reference, member, rng.normal(size=200_000), z_reference, z_member)
    new = rmia_log_ratios(target, reference, member)
    assert np.unique(old).size == old.size, "200,000 continuous z give each of these 60 records its own fraction"
    assert roc_auc(new[is_member], new[~is_member]) == roc_auc(old[is_member], old[~is_member])
    assert np.array_equal(tpr_at_fpr(new[is_member], new[~is_member], FPRS), tpr_at_fpr(old[is_member], old[~is_member], FPRS))


def test_each_population_sample_is_scored_against_the_others_only():
    ratio_z = np.array([0.3, -1.0, 0.3, 2.0, 0.0])
    for gamma in (0.5, 1.0, np.e):
        expected = [sum(ratio_z[i] - ratio_z[j] >= np.log(gamma) - 1e-12 for j in range(5) if j != i) / 4 for i in range(5)]
        assert np.allclose(rmia_fractions_left_out(ratio_z, gamma=gamma), expected)
    # a record that is not a z is scored against all of them; a z (index >= 0) against the others
    assert rmia_fractions([0.3, 2.0], ratio_z, [-1, 3]).tolist() == [0.8, 1.0]
