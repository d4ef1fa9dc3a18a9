"""The order-statistics one-run test against Xiang et al.'s numbers and an independent quadrature.

Oracles: Xiang et al.'s published table (60 audits, transcribed below), the
same p-value computed by scipy.integrate.quad over the score threshold (a
different variable and integrator than the library's Beta cells), and a
direct simulation of the game.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from privaudit.stats.families import EpsilonDelta, GaussianDP
from privaudit.stats.one_run_nulls import DPSGD, LaplaceDP, SubsampledGaussianDP
from privaudit.stats.order_statistics import (
    _expected_mistakes,
    design_num_guesses,
    order_statistics_bound,
    order_statistics_lower_bound,
    order_statistics_p_value,
)

DELTA = 1e-5

# Xiang, Wang, Xiao, Tian, Wang, "Tight Privacy Audit in One Run" (arXiv:2509.08704),
# github.com/zihangxiang/tight-privacy-audit-in-one-run, compare/RESULTS.txt at commit 6359b19:
# family, μ, q, true ε at δ = 1e-5, n, r, u (round of the expected mistakes), their bound at 95%.
XIANG_RESULTS = """
    gdp 0.5 1 1.9931 1000 100 26 1.1926
    gdp 0.5 1 1.9931 1000 250 75 1.4203
    gdp 0.5 1 1.9931 1000 500 172 1.4689
    gdp 0.5 1 1.9931 1000 1000 401 1.4140
    gdp 0.5 1 1.9931 10000 1000 259 1.7437
    gdp 0.5 1 1.9931 10000 2500 755 1.8052
    gdp 0.5 1 1.9931 10000 5000 1721 1.8279
    gdp 0.5 1 1.9931 10000 10000 4013 1.8074
    gdp 0.5 1 1.9931 100000 10000 2585 1.9166
    gdp 0.5 1 1.9931 100000 25000 7545 1.9348
    gdp 0.5 1 1.9931 100000 50000 17213 1.9406
    gdp 0.5 1 1.9931 100000 100000 40129 1.9345
    gdp 1 1 4.3772 1000 100 10 3.1645
    gdp 1 1 4.3772 1000 250 36 3.6327
    gdp 1 1 4.3772 1000 500 103 3.7557
    gdp 1 1 4.3772 1000 1000 309 3.6700
    gdp 1 1 4.3772 10000 1000 97 4.0141
    gdp 1 1 4.3772 10000 2500 364 4.1371
    gdp 1 1 4.3772 10000 5000 1034 4.1789
    gdp 1 1 4.3772 10000 10000 3085 4.1592
    gdp 1 1 4.3772 100000 10000 967 4.2662
    gdp 1 1 4.3772 100000 25000 3641 4.3013
    gdp 1 1 4.3772 100000 50000 10343 4.3144
    gdp 1 1 4.3772 100000 100000 30854 4.3079
    gdp 2 1 9.9973 1000 100 1 5.9018
    gdp 2 1 9.9973 1000 250 4 7.9541
    gdp 2 1 9.9973 1000 500 20 8.9216
    gdp 2 1 9.9973 1000 1000 159 9.0038
    gdp 2 1 9.9973 10000 1000 5 8.7173
    gdp 2 1 9.9973 10000 2500 36 9.4097
    gdp 2 1 9.9973 10000 5000 202 9.6526
    gdp 2 1 9.9973 10000 10000 1587 9.6881
    gdp 2 1 9.9973 100000 10000 51 9.5899
    gdp 2 1 9.9973 100000 25000 362 9.8094
    gdp 2 1 9.9973 100000 50000 2016 9.8905
    gdp 2 1 9.9973 100000 100000 15866 9.9002
    sgm 1 0.5 3.5340 1000 100 24 2.1584
    sgm 1 0.5 3.5340 1000 250 78 2.1201
    sgm 1 0.5 3.5340 1000 500 176 2.2774
    sgm 1 0.5 3.5340 1000 1000 404 2.2223
    sgm 1 0.5 3.5340 10000 1000 242 3.1102
    sgm 1 0.5 3.5340 10000 2500 776 3.0878
    sgm 1 0.5 3.5340 10000 5000 1761 3.1149
    sgm 1 0.5 3.5340 10000 10000 4043 3.0963
    sgm 1 0.5 3.5340 100000 10000 2423 3.3995
    sgm 1 0.5 3.5340 100000 25000 7763 3.3907
    sgm 1 0.5 3.5340 100000 50000 17606 3.4007
    sgm 1 0.5 3.5340 100000 100000 40427 3.3944
    sgm 2 0.2 7.6204 1000 100 22 4.6207
    sgm 2 0.2 7.6204 1000 250 87 3.5077
    sgm 2 0.2 7.6204 1000 500 199 2.8572
    sgm 2 0.2 7.6204 1000 1000 432 2.8743
    sgm 2 0.2 7.6204 10000 1000 216 6.7008
    sgm 2 0.2 7.6204 10000 2500 870 6.1668
    sgm 2 0.2 7.6204 10000 5000 1987 5.8117
    sgm 2 0.2 7.6204 10000 10000 4317 5.8610
    sgm 2 0.2 7.6204 100000 10000 2156 7.3328
    sgm 2 0.2 7.6204 100000 25000 8697 7.1450
    sgm 2 0.2 7.6204 100000 50000 19868 7.0063
    sgm 2 0.2 7.6204 100000 100000 43173 7.0250
"""
ROWS = [line.split() for line in XIANG_RESULTS.strip().splitlines()]


def _null(family: str, q: float) -> GaussianDP | SubsampledGaussianDP:
    return GaussianDP(DELTA) if family == "gdp" else SubsampledGaussianDP(q, DELTA)


@pytest.mark.parametrize("row", ROWS, ids=["-".join(row[:3] + row[4:6]) for row in ROWS])
def test_reproduces_xiang_et_al_table_to_two_decimals(row: list[str]) -> None:
    family, mu, q, true_epsilon, n, r, u, theirs = row
    null = _null(family, float(q))
    bound = order_statistics_bound(null, num_canaries=int(n), num_guesses=int(r), num_correct=int(r) - int(u))
    assert bound.epsilon == pytest.approx(float(theirs), abs=0.005)
    assert bound.epsilon <= float(theirs) + 1e-3  # ours is an upper bound on the p-value: never above theirs by more than their grid
    assert null.epsilon(float(mu)) == pytest.approx(float(true_epsilon), abs=5e-4)
    # their u is round(E[T]) at the true mechanism: our integral of the same law lands within one
    assert abs(_expected_mistakes(null, float(mu), int(n), int(r)) - int(u)) <= 1.0


def test_documented_example() -> None:
    bound = order_statistics_bound(GaussianDP(DELTA), num_canaries=10_000, num_guesses=2_500, num_correct=2_500 - 364)
    assert round(bound.epsilon, 2) == 4.14  # Xiang et al.: 4.1371
    assert bound.parameter_name == "mu" and bound.parameter is not None
    assert bound.null == f"not mu-GDP with mu <= {bound.parameter:.4g}"
    assert bound.ceiling > bound.epsilon


def _quadrature_p_value(mu: float, n: int, r: int, u: int) -> float:
    """P[T <= u] for μ-GDP by quad over the (r+1)-th largest |x - μ/2|, a, of n draws from the mixture."""

    def top(a: float) -> float:
        return float(stats.norm.sf(a + mu / 2) + stats.norm.sf(a - mu / 2))

    def integrand(a: float) -> float:
        s = top(a)
        density = stats.norm.pdf(a + mu / 2) + stats.norm.pdf(a - mu / 2)  # of |x - μ/2| under the mixture
        log_order = special.gammaln(n + 1) - special.gammaln(r + 1) - special.gammaln(n - r) + r * math.log(s) + (n - r - 1) * math.log1p(-s)
        return math.exp(log_order) * density * float(stats.binom.cdf(u, r, stats.norm.sf(a + mu / 2) / s))

    return float(integrate.quad(integrand, 0.0, 12.0, limit=400, epsabs=1e-12)[0])


@pytest.mark.parametrize(("mu", "n", "r", "u"), [(1.0, 40, 10, 1), (0.5, 60, 30, 8), (2.0, 200, 50, 0), (1.0, 200, 199, 30)])
def test_p_value_matches_quadrature_and_errs_high(mu: float, n: int, r: int, u: int) -> None:
    exact = _quadrature_p_value(mu, n, r, u)
    ours = order_statistics_p_value(GaussianDP(DELTA), mu, num_canaries=n, num_guesses=r, num_correct=r - u)
    assert exact - 1e-9 <= ours <= exact + 2e-3 * max(exact, 1e-3)


def test_p_value_matches_simulated_game() -> None:
    rng = np.random.default_rng(5)
    mu, n, r, u, games = 1.0, 30, 8, 1, 200_000
    bits = rng.random((games, n)) < 0.5
    x = bits * mu + rng.normal(size=(games, n))
    distance = np.abs(x - mu / 2)
    wrong = (x > mu / 2) != bits
    top = np.argpartition(-distance, r - 1, axis=1)[:, :r]
    mistakes = np.take_along_axis(wrong, top, axis=1).sum(axis=1)
    simulated = float(np.mean(mistakes <= u))
    ours = order_statistics_p_value(GaussianDP(DELTA), mu, num_canaries=n, num_guesses=r, num_correct=r - u)
    assert ours == pytest.approx(simulated, abs=4 * math.sqrt(simulated * (1 - simulated) / games) + 1e-3)


def test_everything_released_is_a_binomial_test() -> None:
    # r = n: T ~ Binomial(n, Bayes error); for (ε, 0)-DP the error is 1/(1 + e^ε)
    p = order_statistics_p_value(EpsilonDelta(0.0), 1.0, num_canaries=100, num_guesses=100, num_correct=80)
    assert p == pytest.approx(stats.binom.cdf(20, 100, 1 / (1 + math.e)), rel=1e-12)


def test_no_leak_no_bound() -> None:
    bound = order_statistics_bound(GaussianDP(DELTA), num_canaries=1_000, num_guesses=100, num_correct=50)
    assert bound.epsilon == 0.0 and bound.parameter is None and bound.null == "nothing refuted"


def test_design_picks_the_release_fraction_xiang_found_best() -> None:
    # Xiang et al.'s table: SGM μ = 2, q = 0.2 is best at r/n = 0.1 of those tried; GDP μ = 1 at n = 10³ at 0.5
    assert design_num_guesses(SubsampledGaussianDP(0.2, DELTA), 0.5, 1_000, fractions=(0.1, 0.25, 0.5, 1.0)) == 100
    assert design_num_guesses(GaussianDP(DELTA), 1.0, 1_000, fractions=(0.1, 0.25, 0.5, 1.0)) == 500


@pytest.mark.parametrize(
    ("name", "value"),
    [("num_canaries", 0), ("num_guesses", 11), ("num_correct", 11)],
)
def test_bad_counts_name_the_argument(name: str, value: int) -> None:
    counts = {"num_canaries": 10, "num_guesses": 10, "num_correct": 5, name: value}
    with pytest.raises(ValueError, match=name):
        order_statistics_bound(GaussianDP(DELTA), **counts)


def test_scores_front_end_uses_the_claims_split_and_one_test() -> None:
    rng = np.random.default_rng(1)
    n, q, mu = 10_000, 0.2, 2.0
    member = rng.random(n) < 0.5
    scores = rng.normal(size=n) + mu * (member & (rng.random(n) < q))
    bound = order_statistics_lower_bound(scores, member, null=SubsampledGaussianDP(q, DELTA), claim=1 / mu)
    assert bound.num_tests == 1 and bound.positive_fraction > 0.99
    assert 0.0 < bound.epsilon <= SubsampledGaussianDP(q, DELTA).epsilon(mu)
    assert bound.null.startswith("not a subsampled Gaussian with sigma >= ")


def test_laplace_and_dpsgd_epsilons() -> None:
    assert LaplaceDP(0.0).epsilon(1.5) == pytest.approx(1.5)
    # one DP-SGD step is the subsampled Gaussian: same ε up to the PLD grid
    assert DPSGD(0.2, 1, DELTA).epsilon(1.0) == pytest.approx(SubsampledGaussianDP(0.2, DELTA).epsilon(1.0), abs=5e-3)
