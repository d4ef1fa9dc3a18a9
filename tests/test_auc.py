"""The rank-based GDP bound: oracles, the AUC–μ identity, Monte Carlo coverage and tightness."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate, stats

from privaudit.stats.auc import auc_interval, gdp_auc_lower_bound
from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.conversions import gdp_epsilon, gdp_mu
from privaudit.stats.metrics import roc_auc

DELTA = 1e-5
TRIALS = 400
# Exceedances allowed for a 95% bound: P(Binomial(400, 0.05) > this) < 0.001.
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))


def brute_force_auc(in_scores, out_scores) -> float:
    pairs = np.subtract.outer(np.asarray(in_scores), np.asarray(out_scores))
    return float(np.mean((pairs > 0) + 0.5 * (pairs == 0)))


# ---------------------------------------------------------------- oracles


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_and_its_standard_error_match_pairwise_oracles(seed):
    rng = np.random.default_rng(seed)
    in_scores, out_scores = rng.integers(0, 6, 37).astype(float), rng.integers(0, 5, 23).astype(float)  # many ties
    result = gdp_auc_lower_bound(in_scores, out_scores, delta=DELTA)
    assert result.auc == pytest.approx(brute_force_auc(in_scores, out_scores), abs=1e-12)
    assert result.auc == pytest.approx(roc_auc(in_scores, out_scores), abs=1e-12)
    # DeLong's variance from the pairwise kernel, written out
    kernel = (np.subtract.outer(in_scores, out_scores) > 0) + 0.5 * (np.subtract.outer(in_scores, out_scores) == 0)
    variance = kernel.mean(1).var(ddof=1) / in_scores.size + kernel.mean(0).var(ddof=1) / out_scores.size
    assert result.auc_standard_error == pytest.approx(np.sqrt(variance), rel=1e-12)


def binormal_variance(auc, m, n):
    """Var of the AUC of N(d, 1) vs N(0, 1) from scipy's bivariate normal CDF (Genz), not Owen's T."""
    h = stats.norm.ppf(auc)
    both = stats.multivariate_normal(mean=[0, 0], cov=[[1, 0.5], [0.5, 1]]).cdf([h, h])
    return (auc * (1 - auc) + (m + n - 2) * (both - auc * auc)) / (m * n)


def score_limit(auc, m, n, z):
    """Smallest A with auc - A <= z sd(A), by plain bisection (the gap decreases in A)."""
    low, high = 1e-9, auc
    if auc - low <= z * np.sqrt(binormal_variance(low, m, n)):
        return low
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if auc - middle > z * np.sqrt(binormal_variance(middle, m, n)) else (low, middle)
    return high


@pytest.mark.parametrize("d", [0.3, 2.0, 4.0])
def test_binormal_variance_matches_monte_carlo(d):
    rng = np.random.default_rng(7)
    aucs = [roc_auc(rng.normal(d, 1, 60), rng.normal(0, 1, 90)) for _ in range(4000)]
    expected = binormal_variance(stats.norm.cdf(d / np.sqrt(2)), 60, 90)
    assert np.var(aucs) == pytest.approx(expected, rel=0.1)  # 4000 draws: relative sd of a variance ≈ 2.2%


def test_the_lower_auc_is_the_smaller_of_the_two_limits_and_mu_follows_from_it():
    rng = np.random.default_rng(3)
    chosen = set()
    # on unit Gaussians the binormal limit is the smaller; unequal spreads widen DeLong's
    for shift, spread in ((0.0, 1.0), (0.7, 1.0), (3.5, 1.0), (0.5, 4.0), (1.0, 0.2)):
        result = gdp_auc_lower_bound(rng.normal(shift, spread, 400), rng.normal(0, 1, 600), delta=DELTA, confidence=0.9)
        z, a, se = stats.norm.ppf(0.9), result.auc, result.auc_standard_error
        wald = 1 / (1 + np.exp(-(np.log(a / (1 - a)) - z * se / (a * (1 - a)))))
        score = score_limit(a, 400, 600, z)
        assert result.interval == ("delong-logit" if wald < score else "binormal-score")
        assert result.auc_lower == pytest.approx(min(wald, score), abs=1e-7)  # Genz's CDF is accurate to ~1e-8
        assert result.parameter == pytest.approx(max(0.0, np.sqrt(2) * stats.norm.ppf(result.auc_lower)), rel=1e-12)
        assert result.epsilon == pytest.approx(gdp_epsilon(result.parameter, DELTA), rel=1e-9)
        chosen.add(result.interval)
    assert chosen == {"delong-logit", "binormal-score"}


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
def test_the_auc_of_the_gdp_trade_off_curve_is_phi_of_mu_over_root_two(mu):
    # 1 - ∫ G_μ(α) dα by quadrature, G_μ(α) = Φ(Φ⁻¹(1 - α) - μ)
    area, _ = integrate.quad(lambda a: stats.norm.cdf(stats.norm.isf(a) - mu), 0.0, 1.0, limit=200)
    assert 1.0 - area == pytest.approx(stats.norm.cdf(mu / np.sqrt(2)), abs=1e-7)
    # and two Gaussians a distance μ apart attain it: the bound is tight on them
    rng = np.random.default_rng(0)
    assert roc_auc(rng.normal(mu, 1, 200_000), rng.normal(0, 1, 200_000)) == pytest.approx(stats.norm.cdf(mu / np.sqrt(2)), abs=3e-3)


def test_perfect_separation_gives_a_finite_max_variance_bound():
    result = gdp_auc_lower_bound(np.arange(10.0, 60.0), np.arange(0.0, 100.0) / 10.0, delta=DELTA)
    size, z = 50, stats.norm.ppf(0.95)
    assert result.auc == 1.0
    # (1 - A)² = z² A (1 - A)/m  ⇒  A = m/(m + z²), unless the binormal score limit is lower
    assert result.auc_lower == pytest.approx(min(size / (size + z * z), score_limit(1.0, 50, 100, z)), abs=1e-7)
    assert np.isfinite(result.epsilon) and result.epsilon > 0


def test_tied_scores_give_zero():
    result = gdp_auc_lower_bound(np.ones(100), np.ones(300), delta=DELTA)
    assert result.auc == 0.5 and result.parameter == 0.0 and result.epsilon == 0.0


def test_result_serialises_to_json():
    rng = np.random.default_rng(1)
    data = json.loads(json.dumps(gdp_auc_lower_bound(rng.normal(1, 1, 50), rng.normal(0, 1, 50), delta=DELTA).to_dict()))
    assert data["result_type"] == "GDPAUCLowerBound" and data["kind"] == "approximate lower bound" and "scipy" in data["versions"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"in_scores": [1.0]}, "`in_scores` must hold at least 2"),
        ({"out_scores": [0.0, np.nan]}, "`out_scores` must contain only finite numbers"),
        ({"delta": 0.0}, r"`delta` must be in \(0, 1\)"),
        ({"confidence": 1.0}, r"`confidence` must be in \(0, 1\)"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    arguments = {"in_scores": [1.0, 2.0], "out_scores": [0.0, 1.0], "delta": DELTA, **kwargs}
    with pytest.raises(ValueError, match=match):
        gdp_auc_lower_bound(arguments.pop("in_scores"), arguments.pop("out_scores"), **arguments)


# ---------------------------------------------------------------- validity by Monte Carlo


@pytest.mark.parametrize("mu", [0.0, gdp_mu(1.0, DELTA), 1.0, 2.0, 3.0, 4.0])
@pytest.mark.parametrize("n_in, n_out", [(30, 30), (100, 100), (1000, 10_000)])
def test_coverage_on_gaussians_which_lie_on_the_gdp_curve(mu, n_in, n_out):
    rng = np.random.default_rng(int(mu * 1000) + n_in)
    exceed = 0
    for _ in range(TRIALS):
        result = gdp_auc_lower_bound(rng.normal(mu, 1, n_in), rng.normal(0, 1, n_out), delta=DELTA)
        exceed += result.parameter > mu + 1e-12
    assert exceed <= ALLOWED


@pytest.mark.parametrize("p", [0.6, 0.9])
def test_coverage_on_randomized_response_with_ties(p):
    # binary scores: the trade-off curve has one kink at α = 1 - p, so the smallest μ is 2Φ⁻¹(p)
    mu = 2 * stats.norm.ppf(p)
    rng = np.random.default_rng(int(100 * p))
    exceed = 0
    for _ in range(TRIALS):
        in_scores, out_scores = (rng.random(200) < p).astype(float), (rng.random(200) < 1 - p).astype(float)
        exceed += gdp_auc_lower_bound(in_scores, out_scores, delta=DELTA).parameter > mu
    assert exceed <= ALLOWED


# ---------------------------------------------------------------- tightness


def test_rank_bound_is_tighter_than_the_threshold_bound_for_weak_leakage():
    """ε = 1 (μ = 0.268) at δ = 1e-5, 10⁴ in and 10⁶ out observations: the issue's hardest acceptance case."""
    mu = gdp_mu(1.0, DELTA)
    rank, threshold = [], []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        in_scores, out_scores = rng.normal(mu, 1, 10_000), rng.normal(0, 1, 1_000_000)
        rank.append(gdp_auc_lower_bound(in_scores, out_scores, delta=DELTA).epsilon)
        threshold.append(epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=mu / 2).epsilon)
    assert np.mean(rank) >= 0.9 and min(rank) >= 0.78 and max(rank) <= 1.1
    assert np.mean(rank) > np.mean(threshold) + 0.02


# ---------------------------------------------------------------- the two-sided interval


def test_two_sided_interval_is_the_one_sided_limit_at_half_the_miss_on_each_side():
    """Each end is gdp_auc_lower_bound's AUC limit at (1 + c)/2, the high end of the swapped scores; the AUC is the brute-force pair count."""
    rng = np.random.default_rng()
    in_scores, out_scores = rng.normal(0.7, 1, 80), rng.normal(0, 1, 120)
    result = auc_interval(in_scores, out_scores, confidence=0.9)
    assert result.auc == pytest.approx(brute_force_auc(in_scores, out_scores), abs=1e-12)
    assert result.low == pytest.approx(gdp_auc_lower_bound(in_scores, out_scores, delta=DELTA, confidence=0.95).auc_lower, abs=1e-12)
    assert 1.0 - result.high == pytest.approx(gdp_auc_lower_bound(out_scores, in_scores, delta=DELTA, confidence=0.95).auc_lower, abs=1e-12)
    assert result.low < result.auc < result.high and not result.excludes(result.auc) and result.excludes(result.low - 1e-9)


@pytest.mark.parametrize("d, ties", [(0.0, False), (1.0, False), (0.0, True), (2.5, True)])
def test_two_sided_interval_covers_the_population_auc_on_each_side(d, ties):
    """Gaussians N(d, 1) against N(0, 1): population AUC Φ(d/√2); rounded scores tie, which the ½-count AUC keeps (population by simulation)."""
    rng = np.random.default_rng(int(10 * d) + ties)
    round_to = 0.5 if ties else 0.0

    def draw(size, shift):
        values = rng.normal(shift, 1, size)
        return np.round(values / round_to) * round_to if ties else values

    truth = float(stats.norm.cdf(d / np.sqrt(2))) if not ties else brute_force_auc(draw(4000, d), draw(4000, 0.0))
    below = above = 0
    for _ in range(TRIALS):
        result = auc_interval(draw(60, d), draw(90, 0.0), confidence=0.9)
        below += result.high < truth - 0.005 * ties  # the simulated truth carries ~0.005 of Monte Carlo error
        above += result.low > truth + 0.005 * ties
    allowed = int(stats.binom.ppf(0.999, TRIALS, 0.05))  # 5% a side at 90%
    assert below <= allowed and above <= allowed
