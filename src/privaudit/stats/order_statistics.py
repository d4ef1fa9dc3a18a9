"""The order-statistics one-run test (Xiang et al. 2025, "Tight Privacy Audit in One Run").

The game: n canaries, each included by an independent fair coin, one run.
The auditor guesses every canary's bit and releases only its r most
confident guesses; u of them are wrong. Under a null pair of output
distributions (:mod:`privaudit.stats.one_run_nulls`) with Bayes guesser,
let S be the top mass of the released set; S is the (r + 1)-th largest of n
uniforms, S ~ Beta(r + 1, n - r), and given S the r released errors are
independent with mean rate γ̄(S) = E(S)/S. Hence (their Theorem 2)

    P[T <= u] = E_S[ BinCDF(u; r, γ̄(S)) ].

The null is rejected when this is below 1 - confidence. We bound the
integral from above, never approximating it: on each cell [s_k, s_{k+1}] of
a grid over the Beta's support, γ̄ >= γ̄(s_k) (γ̄ never decreases) and the
binomial CDF falls with γ̄, so

    P[T <= u] <= F(s_0) + Σ_k (F(s_{k+1}) - F(s_k)) BinCDF(u; r, γ̄(s_k)) + (1 - F(s_K)) BinCDF(u; r, γ̄(s_K)),

F the Beta CDF (exact, ``scipy.special.betainc``). The bound is the largest
leak rejected, found by bisection and reported at the rejected end of the
bracket, then as ε(δ) of the null, rounded down. Any guesser fixed before
the data is seen is covered: the Bayes guesser of the null makes the fewest
mistakes (Xiang et al., Lemma 3), and when exactly that is valid is written
down in docs/one-run.md.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._core.results import Result
from .._core.validation import as_scores, check_count, check_fraction, check_probability, check_real
from .one_run import check_members, guess_outcomes

__all__ = [
    "DESIGN_FRACTIONS",
    "OneRunNull",
    "OrderStatisticsBound",
    "claim_leak",
    "design_num_guesses",
    "order_statistics_bound",
    "order_statistics_lower_bound",
    "order_statistics_p_value",
]

#: The release fractions r/n among which :func:`design_num_guesses` picks, about 20% apart: the mistakes are
#: integers, so the bound jumps with r and a coarse grid misses the best median.
DESIGN_FRACTIONS = (0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0)
_GRID = 1024  # cells over the Beta's support: the bound moves by < 10⁻⁴ in ε beyond it
_OUTSIDE = 1e-13  # Beta mass left outside the grid on each side (counted as a certain rejection failure)


class OneRunNull(Protocol):
    """What the test needs of a null family (see :mod:`privaudit.stats.one_run_nulls`): frozen, hence hashable."""

    def __hash__(self) -> int: ...

    @property
    def name(self) -> str: ...
    @property
    def parameter_name(self) -> str: ...
    @property
    def delta(self) -> float: ...
    @property
    def leak_range(self) -> tuple[float, float]: ...
    def knots(self, leak: float, s_lo: float, s_hi: float, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...
    def positive_share(self, leak: float, s: float) -> float: ...
    def epsilon(self, leak: float) -> float: ...
    def parameter(self, leak: float) -> float: ...
    def describe(self, leak: float) -> str: ...


@functools.lru_cache(maxsize=64)
def _window(n: int, r: int) -> tuple[float, float]:
    a, b = r + 1.0, float(n - r)
    return float(special.betaincinv(a, b, _OUTSIDE)), float(special.betaincinv(a, b, 1.0 - _OUTSIDE))


def _cells(null: OneRunNull, leak: float, n: int, r: int, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Beta CDF at the knots and the mean error rate there (r < n)."""
    a, b = r + 1.0, float(n - r)
    s_lo, s_hi = _window(n, r)
    s, errors = null.knots(leak, s_lo, s_hi, size)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(s > 0.0, errors / s, 0.0)
    return np.asarray(special.betainc(a, b, s), dtype=np.float64), np.clip(rate, 0.0, 0.5)


def _p_value(null: OneRunNull, leak: float, n: int, r: int, u: int, size: int = _GRID) -> float:
    if u >= r:
        return 1.0
    if r == n:  # everything released: S = 1
        _, errors = null.knots(leak, 1.0, 1.0, 1)
        return float(special.bdtr(u, r, min(0.5, float(errors[-1]))))
    cdf, rate = _cells(null, leak, n, r, size)
    binomial = special.bdtr(u, r, rate)
    total = cdf[0] + float(np.sum(np.diff(cdf) * binomial[:-1])) + (1.0 - cdf[-1]) * binomial[-1]
    return float(min(1.0, total))


def _check_counts(num_canaries: Any, num_guesses: Any, num_correct: Any) -> tuple[int, int, int]:
    n = check_count(num_canaries, "num_canaries", minimum=1)
    r = check_count(num_guesses, "num_guesses", minimum=1, maximum=n)
    v = check_count(num_correct, "num_correct", minimum=0, maximum=r)
    return n, r, v


def order_statistics_p_value(null: OneRunNull, leak: Any, *, num_canaries: Any, num_guesses: Any, num_correct: Any) -> float:
    """An upper bound (tight to ~10⁻⁴) on P[T <= r - v] under ``null`` at ``leak``: a valid p-value.

    >>> from privaudit.stats.families import GaussianDP
    >>> def p(mu):  # 364 mistakes in 2,500 guesses among 10⁴ canaries: Xiang et al.'s example
    ...     return order_statistics_p_value(GaussianDP(1e-5), mu, num_canaries=10_000, num_guesses=2_500, num_correct=2_136)
    >>> round(p(0.9523), 3), round(p(1.0), 2)  # μ = 0.9523 (ε = 4.137) is just rejected at 95%; μ = 1 is the truth
    (0.05, 0.51)
    """
    n, r, v = _check_counts(num_canaries, num_guesses, num_correct)
    value = check_real(leak, "leak")
    if value <= 0.0:
        raise ValueError(f"`leak` must be > 0, got {leak!r}")
    return _p_value(null, value, n, r, r - v)


def _largest_rejected(null: OneRunNull, n: int, r: int, u: int, level: float, tolerance: float = 1e-5) -> tuple[float, bool]:
    """(leak, hit_top): the largest leak rejected at ``level`` (0.0 if none), at the rejected end of its bracket."""
    low, high = null.leak_range
    if _p_value(null, low, n, r, u) >= level:
        return 0.0, False
    if _p_value(null, high, n, r, u) < level:
        return high, True
    while high / low > 1.0 + tolerance:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if _p_value(null, middle, n, r, u) < level else (low, middle)
    return low, False


@dataclasses.dataclass(frozen=True)
class OrderStatisticsBound(Result):
    """A one-run lower bound from the order-statistics test.

    ``null`` names what was refuted (e.g. "DP-SGD with sigma >= 1.23, q = 0.01,
    T = 1000" is *not* the mechanism); ``parameter`` is that family parameter
    (None when nothing was refuted), ``epsilon`` the ε it implies at
    ``delta``, rounded down. ``ceiling`` is the bound had all guesses been
    right. ``num_tests`` guess counts were tried, each at level
    (1 - confidence)/num_tests; ``at_range_end`` flags a bound capped by the
    family's search range (it is still valid, only not the largest).
    """

    epsilon: float
    delta: float
    confidence: float
    family: str
    parameter_name: str
    parameter: float | None
    null: str
    num_canaries: int
    num_guesses: int
    num_correct: int
    num_tests: int
    ceiling: float
    at_range_end: bool
    positive_fraction: float = float("nan")
    method: str = "order-statistics"
    kind: str = "lower bound"
    valid: bool = True


def _bound(null: OneRunNull, n: int, r: int, v: int, confidence: float, num_tests: int) -> OrderStatisticsBound:
    level = (1.0 - confidence) / num_tests
    leak, top = _largest_rejected(null, n, r, r - v, level)
    best, _ = _largest_rejected(null, n, r, 0, level)
    refuted = leak > 0.0
    return OrderStatisticsBound(
        epsilon=null.epsilon(leak) if refuted else 0.0,
        delta=null.delta,
        confidence=confidence,
        family=null.name,
        parameter_name=null.parameter_name,
        parameter=null.parameter(leak) if refuted else None,
        null=f"not {null.describe(leak)}" if refuted else "nothing refuted",
        num_canaries=n,
        num_guesses=r,
        num_correct=v,
        num_tests=num_tests,
        ceiling=null.epsilon(best) if best > 0.0 else 0.0,
        at_range_end=top,
    )


def order_statistics_bound(null: OneRunNull, *, num_canaries: Any, num_guesses: Any, num_correct: Any, confidence: Any = 0.95) -> OrderStatisticsBound:
    """The order-statistics lower bound from released counts: r guesses, v right, n canaries.

    Xiang et al.'s documented example (their compare/RESULTS.txt):

    >>> from privaudit.stats.families import GaussianDP
    >>> bound = order_statistics_bound(GaussianDP(1e-5), num_canaries=10_000, num_guesses=2_500, num_correct=2_136)
    >>> round(bound.epsilon, 2), bound.null[:24]
    (4.14, 'not mu-GDP with mu <= 0.')
    """
    n, r, v = _check_counts(num_canaries, num_guesses, num_correct)
    return _bound(null, n, r, v, check_probability(confidence, "confidence"), 1)


def _expected_mistakes(null: OneRunNull, leak: float, n: int, r: int) -> float:
    if r == n:
        return n * float(null.knots(leak, 1.0, 1.0, 1)[1][-1])
    cdf, rate = _cells(null, leak, n, r, _GRID)
    return r * float(np.sum(np.diff(cdf) * 0.5 * (rate[1:] + rate[:-1])))


def _median_mistakes(null: OneRunNull, leak: float, n: int, r: int) -> int:
    """The median of T under the null (smallest u with P[T <= u] >= ½): the bound is monotone in u, so its median is the bound there."""
    low, high = 0, r
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if _p_value(null, leak, n, r, middle) >= 0.5 else (middle + 1, high)
    return low


def claim_leak(null: OneRunNull, claim: float) -> float:
    """The leak of the null at the family parameter ``claim`` (σ families: 1/σ; μ and ε: itself).

    >>> from privaudit.stats.one_run_nulls import SubsampledGaussianDP
    >>> claim_leak(SubsampledGaussianDP(0.2, 1e-5), 4.0)
    0.25
    """
    return 1.0 / claim if null.parameter_name == "sigma" else claim


def design_num_guesses(null: OneRunNull, claim: Any, num_canaries: Any, *, confidence: Any = 0.95, fractions: Any = DESIGN_FRACTIONS) -> int:
    """The guess count r to fix in advance: the one whose median bound is largest when the claim is exactly right.

    For each r = round(f n), the claim's own null gives the law of the
    mistakes T; the bound falls with T, so its median is the bound at the
    median of T, and the r whose median bound is largest wins. It uses the design
    (the claim, n) and never the data, so it costs no multiple-test
    correction. ``claim`` is the family's parameter (μ, σ, or ε).

    When even the best median bound is 0, the winner is a count so small
    that all its guesses right (its ceiling) cannot exceed the claim: a test
    with no power. Half the canaries is then the count (Xiang et al.'s
    r/n = ½), also fixed by the design alone.

    >>> from privaudit.stats.families import GaussianDP
    >>> design_num_guesses(GaussianDP(1e-5), 0.915, 1_000)  # ε = 4: release 60%
    600
    >>> design_num_guesses(GaussianDP(1e-5), 0.1, 200)  # μ = 0.1 from 200 canaries: no count could refute it, so half
    100
    """
    n = check_count(num_canaries, "num_canaries", minimum=2)
    leak = claim_leak(null, check_real(claim, "claim"))
    level = 1.0 - check_probability(confidence, "confidence")
    return _design(null, leak, n, level, tuple(float(fraction) for fraction in fractions))


@functools.lru_cache(maxsize=128)
def _design(null: OneRunNull, leak: float, n: int, level: float, fractions: tuple[float, ...]) -> int:
    best, chosen = -1.0, n
    for fraction in fractions:
        r = max(1, min(n, int(round(fraction * n))))
        found, _ = _largest_rejected(null, n, r, _median_mistakes(null, leak, n, r), level, tolerance=1e-3)  # a ranking: 0.1% is plenty
        if found > best:
            best, chosen = found, r
    ceiling, _ = _largest_rejected(null, n, chosen, 0, level, tolerance=1e-3)  # every guess right
    return chosen if ceiling > leak else max(1, n // 2)


def order_statistics_lower_bound(
    scores: Any,
    is_member: Any,
    *,
    null: OneRunNull,
    claim: Any = None,
    confidence: Any = 0.95,
    num_guesses: Any = None,
    positive_fraction: Any = None,
) -> OrderStatisticsBound:
    """One-run ε lower bound from canary scores (higher = more likely in), tested against ``null``.

    The guesses: the round(r × positive_fraction) highest scores say "in",
    the rest of the r lowest "out" (ties never split). Everything is fixed
    from the design: with a ``claim`` (the family's parameter the claim
    states), r comes from :func:`design_num_guesses` and the split from the
    claim's likelihood ratio (the share of its top-r/n outputs that say "in");
    without one, r/n = 0.1 and 0.5 are both tried under Bonferroni and the
    split is even. ``num_guesses`` (one int or several, Bonferroni over
    them) and ``positive_fraction`` override.

    >>> from privaudit.stats.families import GaussianDP
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(10_000) < 0.5
    >>> bound = order_statistics_lower_bound(member + rng.normal(size=10_000), member, null=GaussianDP(1e-5), claim=1.0)
    >>> bool(3.5 < bound.epsilon < 4.3772), bound.num_tests  # ε of 1-GDP at 10⁻⁵ is 4.377
    (True, 1)
    """
    values = as_scores(scores, "scores")
    member = check_members(is_member, values.shape)
    confidence = check_probability(confidence, "confidence")
    n = values.size
    leak = None if claim is None else claim_leak(null, check_positive_claim(claim))
    if num_guesses is None:
        counts = [design_num_guesses(null, claim, n, confidence=confidence)] if claim is not None else sorted({max(1, round(0.1 * n)), max(1, round(0.5 * n))})
    else:
        raw = [num_guesses] if np.ndim(num_guesses) == 0 else list(num_guesses)
        counts = [check_count(count, "num_guesses", minimum=1, maximum=n) for count in raw]
    results = []
    for r in counts:
        if positive_fraction is not None:
            share = check_fraction(positive_fraction, "positive_fraction")
        else:
            share = 0.5 if leak is None else null.positive_share(leak, r / n)
        made, correct = guess_outcomes(values, member, np.array([r]), share)
        result = _bound(null, n, int(made[0]), int(correct[0]), confidence, len(counts)) if made[0] > 0 else None
        if result is not None:
            results.append(dataclasses.replace(result, positive_fraction=share))
    if not results:
        raise ValueError("`scores` are all tied: no guess can be made without splitting a tie")
    return max(results, key=lambda result: result.epsilon)


def check_positive_claim(claim: Any) -> float:
    """The claim's parameter, > 0."""
    value = check_real(claim, "claim")
    if value <= 0.0:
        raise ValueError(f"`claim` must be > 0, got {claim!r}")
    return value
