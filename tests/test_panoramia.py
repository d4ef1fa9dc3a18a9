"""PANORAMIA: a brute-force binomial oracle, Hoeffding vs exact, and coverage of c_lb with a known c."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from privaudit import panoramia_bounds

TRIALS = 500
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))


C_GRID = np.linspace(0.0, 8.0, 80_001)


def largest_rejected_c(tp, r, alpha, grid=C_GRID):
    """Brute force: the largest c on a fine grid with P[Bin(r, e^c/(1+e^c)) >= tp] <= alpha."""
    rejected = stats.binom.sf(tp - 1, r, special.expit(grid)) <= alpha
    return grid[rejected].max() if rejected.any() else 0.0


def test_bounds_match_a_brute_force_binomial_search():
    rng = np.random.default_rng(0)
    member = rng.random(3000) < 0.5
    baseline = member * 0.8 + rng.normal(size=3000)
    mia = member * 1.6 + rng.normal(size=3000)
    result = panoramia_bounds(baseline, mia, member, num_recall_levels=8)
    counts = np.unique(np.geomspace(1, 3000, 8).round().astype(int))
    alpha = 0.05 / 2 / counts.size
    for scores, expected_bound in ((baseline, result.c_lb), (mia, result.c_plus_epsilon_lb)):
        ordered = member[np.argsort(-scores, kind="stable")]
        best = max(largest_rejected_c(int(ordered[:r].sum()), r, alpha) for r in counts)
        assert expected_bound == pytest.approx(best, abs=2e-4)
    assert result.epsilon_tilde == pytest.approx(max(0.0, result.c_plus_epsilon_lb - result.c_lb))


def test_exact_binomial_is_tighter_than_hoeffding():
    rng = np.random.default_rng(1)
    member = rng.random(5000) < 0.5
    baseline = member * 1.0 + rng.normal(size=5000)
    exact = panoramia_bounds(baseline, baseline, member)
    readable = panoramia_bounds(baseline, baseline, member, method="hoeffding")
    assert 0 < readable.c_lb <= exact.c_lb
    assert exact.epsilon_tilde == 0.0  # the MIA is the baseline


def _generated_and_real(rng, m, c):
    """Real x ~ Bernoulli(½); generated x = 1 w.p. e^{-c}/2, so G(x) >= e^{-c} D(x), tight at x = 1."""
    member = rng.random(m) < 0.5
    x = np.where(member, rng.random(m) < 0.5, rng.random(m) < np.exp(-c) / 2)
    return member, x + 1e-3 * rng.random(m)  # random tie-breaking within each value


def test_c_lb_coverage_with_a_known_c():
    c, m = 1.0, 2000
    rng = np.random.default_rng(2)
    exceed = 0
    for _ in range(TRIALS):
        member, scores = _generated_and_real(rng, m, c)
        exceed += panoramia_bounds(scores, scores, member).c_lb > c
    assert exceed <= ALLOWED


def test_c_lb_is_zero_when_generated_data_are_real_like():
    rng = np.random.default_rng(3)
    positives = 0
    for _ in range(TRIALS):
        member = rng.random(1000) < 0.5
        scores = rng.normal(size=1000)  # the baseline cannot tell them apart
        positives += panoramia_bounds(scores, scores, member).c_lb > 0
    assert positives <= ALLOWED


def test_uncorrected_search_is_flagged_and_at_least_as_large():
    rng = np.random.default_rng(4)
    member = rng.random(2000) < 0.5
    scores = member * 1.0 + rng.normal(size=2000)
    corrected = panoramia_bounds(scores, scores, member)
    paper = panoramia_bounds(scores, scores, member, correction="none")
    assert paper.valid is False and corrected.valid is True
    assert paper.c_lb >= corrected.c_lb


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(baseline_scores=[np.nan, 1.0]), "`baseline_scores`"),
        (dict(mia_scores=[1.0]), "`mia_scores` must have the shape"),
        (dict(is_member=[True]), "`is_member`"),
        (dict(confidence=0.0), "`confidence`"),
        (dict(method="chernoff"), "`method`"),
        (dict(correction="holm"), "`correction`"),
        (dict(num_recall_levels=0), "`num_recall_levels`"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    arguments = dict(baseline_scores=[1.0, 2.0], mia_scores=[1.0, 2.0], is_member=[True, False])
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=match):
        panoramia_bounds(arguments.pop("baseline_scores"), arguments.pop("mia_scores"), arguments.pop("is_member"), **arguments)


@pytest.mark.parametrize("value", [True, False])
def test_one_class_audit_sets_are_refused(value):
    # issue 19: no generated samples gave c_lb = {c+ε}_lb = 4.13 from precision 1 alone
    from privaudit.stats.panoramia import real_non_member_bound

    rng = np.random.default_rng(0)
    member = np.full(200, value)
    with pytest.raises(ValueError, match="`is_member`"):
        panoramia_bounds(rng.normal(size=200), rng.normal(size=200), member)
    with pytest.raises(ValueError, match="`is_member`"):
        real_non_member_bound(rng.normal(size=200), member)
