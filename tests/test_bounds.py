"""ε lower bounds from observations: oracles, Monte Carlo validity, tightness, properties."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privaudit import epsilon_lower_bound, gdp_epsilon
from privaudit.stats.bounds import EpsilonLowerBound
from privaudit.stats.thresholds import Best, Bonferroni, Split

DELTA = 1e-5
TRIALS = 500
# Exceedances allowed for a 95% bound: P(Binomial(500, 0.05) > this) < 0.001.
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))


def cp_upper(k: int, n: int, level: float) -> float:
    """One-sided Clopper–Pearson upper bound, via scipy's two-sided exact interval."""
    return stats.binomtest(k, n).proportion_ci(confidence_level=2 * level - 1, method="exact").high


def gaussian_scores(rng, mu, n):
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


# ---------------------------------------------------------------- oracles


@pytest.mark.parametrize("method", ["gdp", "eps-delta", "pure"])
def test_fixed_threshold_matches_brute_force(method):
    rng = np.random.default_rng(7)
    in_scores, out_scores = gaussian_scores(rng, 1.5, 400)
    t = 0.8
    fp = sum(1 for s in out_scores if s >= t)
    fn = sum(1 for s in in_scores if s < t)
    level = 1 - 0.05 / 2
    a, b = cp_upper(fp, 400, level), cp_upper(fn, 400, level)
    if method == "gdp":
        expected = gdp_epsilon(max(0.0, stats.norm.ppf(1 - a) - stats.norm.ppf(b)), DELTA)
    else:
        d = DELTA if method == "eps-delta" else 0.0
        expected = max(0.0, np.log((1 - d - a) / b), np.log((1 - d - b) / a))
    result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, method=method, threshold=t)
    assert (result.false_positives, result.false_negatives) == (fp, fn)
    assert result.fpr_upper == pytest.approx(a, rel=1e-9)
    assert result.fnr_upper == pytest.approx(b, rel=1e-9)
    assert result.epsilon == pytest.approx(expected, rel=1e-7, abs=1e-9)
    assert result.valid and result.kind == "lower bound" and result.num_selection == 0
    assert result.method == method  # a pure bound (δ = 0 in the formula) says so, not "eps-delta"


def test_katz_log_matches_formula():
    in_scores = np.r_[np.ones(80), np.zeros(20)]
    out_scores = np.r_[np.ones(10), np.zeros(90)]
    z = stats.norm.ppf(1 - 0.05 / 2)
    # TPR/FPR = 0.8/0.1 and TNR/FNR = 0.9/0.2, Katz et al.'s standard error of the log ratio
    first = np.log(8.0) - z * np.sqrt(1 / 80 - 1 / 100 + 1 / 10 - 1 / 100)
    second = np.log(4.5) - z * np.sqrt(1 / 90 - 1 / 100 + 1 / 20 - 1 / 100)
    result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, method="pure", interval="katz-log", threshold=1.0)
    assert result.epsilon == pytest.approx(max(first, second), rel=1e-12)
    assert result.kind == "approximate lower bound"


def test_bonferroni_with_given_thresholds_tests_each_at_corrected_level():
    rng = np.random.default_rng(3)
    in_scores, out_scores = gaussian_scores(rng, 1.0, 1000)
    grid = (0.0, 0.5, 1.0, 1.5)
    result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=Bonferroni(thresholds=grid))
    singles = [epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=t, confidence=1 - 0.05 / 4).epsilon for t in grid]
    assert result.epsilon == pytest.approx(max(singles), rel=1e-12)
    assert result.num_tests == 4 and result.valid


def test_split_bounds_on_the_held_out_rest_and_is_reproducible():
    rng = np.random.default_rng(4)
    in_scores, out_scores = gaussian_scores(rng, 1.0, 1001)
    first = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=Split(0.3), seed=11)
    again = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=Split(0.3), seed=11)
    assert first == again
    assert (first.num_in, first.num_out, first.num_selection) == (701, 701, 600)  # round(0.3 × 1001) = 300 per side
    assert first.false_positives + 0 <= first.num_out


def test_best_is_flagged_invalid_and_at_least_as_large_as_any_fixed_threshold():
    rng = np.random.default_rng(5)
    in_scores, out_scores = gaussian_scores(rng, 1.0, 300)
    best = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=Best())
    assert not best.valid and best.kind.startswith("optimistic")
    fixed = [epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=t).epsilon for t in (0.0, 0.5, 1.0)]
    assert best.epsilon >= max(fixed) - 1e-9


def test_result_serialises_to_json():
    rng = np.random.default_rng(6)
    result = epsilon_lower_bound(*gaussian_scores(rng, 1.0, 200), delta=DELTA, interval="bayes", seed=1)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["result_type"] == "EpsilonLowerBound" and data["seed"] == 1
    assert data["epsilon_credible_interval"][0] <= data["epsilon_median"] <= data["epsilon_credible_interval"][1]
    assert "scipy" in data["versions"]


# ---------------------------------------------------------------- validity by Monte Carlo


def _exceedances(mu, strategy, method="gdp", interval="clopper-pearson", n=1000, seed=2024):
    rng = np.random.default_rng(seed)
    true_epsilon = gdp_epsilon(mu, DELTA) if mu > 0 else 0.0
    count = 0
    for trial in range(TRIALS):
        in_scores, out_scores = gaussian_scores(rng, mu, n)
        result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, method=method, interval=interval, threshold=strategy, seed=trial)
        count += result.epsilon > true_epsilon + 1e-9
    return count


@pytest.mark.parametrize("strategy", ["split", 1.0, "bonferroni"])
def test_gdp_clopper_pearson_coverage(strategy):
    # observations of the Gaussian mechanism lie exactly on the GDP curve: the hardest case
    assert _exceedances(1.0, strategy) <= ALLOWED


def test_eps_delta_coverage_on_randomized_response():
    # randomized response with ε = 1 is exactly (1, 0)-DP: the (ε, δ) bound is tight on it
    epsilon, n = 1.0, 2000
    p = np.exp(epsilon) / (1 + np.exp(epsilon))
    rng = np.random.default_rng(99)
    exceed = {"clopper-pearson": 0, "katz-log": 0}
    for _ in range(TRIALS):
        in_scores = (rng.random(n) < p).astype(float)
        out_scores = (rng.random(n) < 1 - p).astype(float)
        for interval in exceed:
            result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, method="pure", interval=interval, threshold=1.0)
            exceed[interval] += result.epsilon > epsilon
    assert exceed["clopper-pearson"] <= ALLOWED
    assert exceed["katz-log"] <= ALLOWED  # asymptotic, but close to nominal at n = 2000


@pytest.mark.parametrize("method", ["gdp", "eps-delta"])
def test_null_data_gives_zero(method):
    assert _exceedances(0.0, "split", method=method, n=500) <= ALLOWED


def test_best_threshold_is_optimistic_on_null_data():
    # why "best" is flagged: on null data it reports ε > 0 far more often than 5%
    rng = np.random.default_rng(1)
    positives = sum(
        epsilon_lower_bound(*gaussian_scores(rng, 0.0, 200), delta=DELTA, method="eps-delta", threshold="best", confidence=0.5).epsilon > 0 for _ in range(100)
    )
    split = sum(
        epsilon_lower_bound(*gaussian_scores(rng, 0.0, 200), delta=DELTA, method="eps-delta", threshold="split", confidence=0.5, seed=s).epsilon > 0
        for s in range(100)
    )
    assert positives > split + 20


# ---------------------------------------------------------------- tightness (Tight Auditing Fig. 3)


@pytest.mark.parametrize("mu", [2.0, 3.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_gdp_clopper_pearson_is_tight_with_ten_thousand_observations(mu, seed):
    rng = np.random.default_rng(seed)
    in_scores, out_scores = gaussian_scores(rng, mu, 10_000)
    result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, seed=seed)  # default: Split(0.2)
    true_epsilon = gdp_epsilon(mu, DELTA)
    assert 0.85 * true_epsilon <= result.epsilon <= true_epsilon


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gdp_is_tight_at_a_preregistered_threshold(seed):
    # an auditor who knows the mechanism fixes t = μ/2 in advance and bounds on all 10⁴ per side
    rng = np.random.default_rng(seed)
    in_scores, out_scores = gaussian_scores(rng, 1.0, 10_000)
    result = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=0.5)
    assert 0.85 * gdp_epsilon(1.0, DELTA) <= result.epsilon <= gdp_epsilon(1.0, DELTA)


# ---------------------------------------------------------------- properties

_METHODS = [("gdp", "clopper-pearson"), ("eps-delta", "jeffreys"), ("pure", "katz-log"), ("gdp", "bayes")]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shift=st.floats(0.0, 3.0),
    method=st.sampled_from(_METHODS),
)
def test_more_separation_never_lowers_the_bound(seed, shift, method):
    rng = np.random.default_rng(seed)
    in_scores, out_scores = gaussian_scores(rng, 1.0, 200)
    kwargs = dict(delta=DELTA, method=method[0], interval=method[1], threshold=0.5)
    base = epsilon_lower_bound(in_scores, out_scores, **kwargs).epsilon
    assert epsilon_lower_bound(in_scores + shift, out_scores, **kwargs).epsilon >= base - 1e-7


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    confidences=st.tuples(st.floats(0.5, 0.999), st.floats(0.5, 0.999)),
    method=st.sampled_from(_METHODS),
)
def test_more_confidence_never_raises_the_bound(seed, confidences, method):
    low, high = sorted(confidences)
    rng = np.random.default_rng(seed)
    in_scores, out_scores = gaussian_scores(rng, 1.0, 200)
    kwargs = dict(delta=DELTA, method=method[0], interval=method[1], threshold=0.5)
    assert (
        epsilon_lower_bound(in_scores, out_scores, confidence=high, **kwargs).epsilon
        <= epsilon_lower_bound(in_scores, out_scores, confidence=low, **kwargs).epsilon + 1e-7
    )


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(in_scores=[1.0, np.nan]), "`in_scores`"),
        (dict(out_scores=[]), "`out_scores`"),
        (dict(in_scores=[[1.0, 2.0]]), "`in_scores`"),
        (dict(delta=1.5), r"`delta` must be in \(0, 1\)"),
        (dict(delta=0.0), "`delta`"),
        (dict(confidence=1.0), "`confidence`"),
        (dict(method="gpd"), "`method` must be one of"),
        (dict(interval="wald"), "`interval` must be one of"),
        (dict(interval="katz-log"), "needs method 'pure'"),
        (dict(threshold="median"), "`threshold`"),
        (dict(threshold=float("inf")), "`threshold`"),
        (dict(in_scores=[1.0], threshold="split"), "`in_scores` must hold enough"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    arguments = dict(in_scores=[1.0, 2.0, 3.0], out_scores=[0.0, 1.0, 2.0], delta=DELTA)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=match):
        epsilon_lower_bound(arguments.pop("in_scores"), arguments.pop("out_scores"), **arguments)


def test_bayes_is_refused_for_pld_families():
    from privaudit import SubsampledGaussian

    with pytest.raises(ValueError, match="`interval` 'bayes'"):
        epsilon_lower_bound([1.0, 2.0], [0.0, 1.0], delta=DELTA, method=SubsampledGaussian(), interval="bayes", threshold=0.5)


def test_option_values_validate_themselves():
    with pytest.raises(ValueError, match="`fraction`"):
        Split(fraction=1.0)
    with pytest.raises(ValueError, match="`num_thresholds`"):
        Bonferroni(num_thresholds=0)
    assert isinstance(epsilon_lower_bound([2.0, 3.0], [0.0, 1.0], delta=DELTA, threshold=1.5), EpsilonLowerBound)
