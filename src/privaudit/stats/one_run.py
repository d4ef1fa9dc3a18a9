"""The one-run ε lower bound of Steinke, Nasr and Jagielski (2023), as quoted in PANORAMIA §2.

m canaries are each included in training independently with probability ½.
The auditor guesses "in" or "out" for r of them and abstains on the rest; v
guesses are right. If training is ε-DP, the number of right guesses is
stochastically dominated by Binomial(r, q) with q = e^ε/(1 + e^ε) (their
Proposition 5.1, the statement PANORAMIA §2 quotes). PANORAMIA quotes only
this pure-ε form; for δ > 0 we add the slack of Steinke et al.'s Theorem 5.2:

    p(ε) = P[Bin(r, q) >= v] + 2 m δ · max_{1 <= i <= v} P[v - i <= Bin(r, q) < v] / i.

ε is rejected at confidence c when p(ε) <= 1 - c; the bound is the largest
rejected ε, found by a bracketed root search in the log domain and rounded
down. Every probability is computed from ``scipy.stats.binom.logpmf``/``logsf``,
so v far in the tail (m = 10⁵ and beyond) neither underflows nor overflows.

Conservative choices (each can only lower the bound):

* the δ slack is scaled by the number of canaries m, not the number of
  guesses r, and maximised over every window i (for i > v the ratio only
  shrinks, so i <= v is the exact maximum);
* guesses are made by score *thresholds*: canaries with tied scores are never
  split between a guess and an abstention, so an array sorted by membership
  cannot leak the labels through the tie-breaking order;
* the sweep over guess counts is Bonferroni-corrected; no uncorrected maximum
  is reported.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._core.results import Result
from .._core.validation import as_scores, check_count, check_fraction, check_probability, check_real
from .intervals import binomial_lower_bound
from .roots import brentq  # scipy.optimize's brentq, without its import time

__all__ = [
    "OneRunBound",
    "OneRunSweep",
    "check_guess_counts",
    "check_members",
    "epsilon_one_run",
    "epsilon_one_run_pure",
    "epsilon_one_run_sweep",
    "guess_outcomes",
    "tie_safe_counts",
]

_XTOL = 1e-10
_MAX_EPSILON = 1e3
#: The δ slack sums over up to m windows, one array entry each.
MAX_CANARIES = 10**8


@dataclasses.dataclass(frozen=True)
class OneRunBound(Result):
    """One-run lower bound on ε at the given δ and confidence."""

    epsilon: float
    delta: float
    confidence: float
    num_canaries: int
    num_guesses: int
    num_correct: int
    kind: str = "lower bound"


def _log_p_value(epsilon: float, m: int, r: int, v: int, delta: float) -> float:
    """log p(ε) of the formula in the module docstring."""
    from scipy import stats  # imported where used: scipy.stats alone takes a third of a second

    log_q = -np.logaddexp(0.0, -epsilon)
    q = np.exp(log_q)
    log_tail = float(stats.binom.logsf(v - 1, r, q))  # log P[Bin >= v]
    if delta == 0.0 or v == 0:
        return log_tail
    below = stats.binom.logpmf(np.arange(v - 1, -1, -1), r, q)  # pmf(v-1), pmf(v-2), ..., pmf(0)
    log_windows = np.logaddexp.accumulate(below)  # log P[v - i <= Bin < v], i = 1..v
    log_alpha = float(np.max(log_windows - np.log(np.arange(1, v + 1))))
    return float(np.logaddexp(log_tail, np.log(2.0 * m * delta) + log_alpha))


def _largest_rejected(m: int, r: int, v: int, delta: float, log_level: float) -> float:
    def gap(epsilon: float) -> float:
        return _log_p_value(epsilon, m, r, v, delta) - log_level

    if r == 0 or gap(0.0) > 0.0:
        return 0.0
    high = 1.0
    while gap(high) <= 0.0:
        if high >= _MAX_EPSILON:
            return _MAX_EPSILON
        high *= 2.0
    root = brentq(gap, 0.0, high, xtol=_XTOL)
    return float(max(0.0, root - 2 * _XTOL))


def _check_delta(delta: Any) -> float:
    # δ = 0 is the pure-ε test, so the shared open-interval check does not fit
    value = check_real(delta, "delta")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"`delta` must be in [0, 1), got {value:g}")
    return value


def epsilon_one_run(num_canaries: Any, num_guesses: Any, num_correct: Any, *, delta: Any, confidence: Any = 0.95) -> OneRunBound:
    """Lower-bound ε from one training run with ``num_canaries`` randomly included canaries.

    Parameters
    ----------
    num_canaries : int >= 1
        m, the canaries each included independently with probability ½.
    num_guesses : int in [0, m]
        r, the canaries the auditor guessed on (it abstains on the others).
    num_correct : int in [0, r]
        v, the right guesses.
    delta : float in [0, 1)
    confidence : float in (0, 1)

    Examples
    --------
    With all r guesses right and δ = 0 the bound solves q^r = 1 - c:

    >>> from scipy.special import logit
    >>> result = epsilon_one_run(1000, 100, 100, delta=0.0)
    >>> round(result.epsilon, 4), round(float(logit(0.05 ** (1 / 100))), 4)
    (3.493, 3.493)
    >>> epsilon_one_run(1000, 100, 50, delta=1e-5).epsilon  # chance level
    0.0
    """
    m = check_count(num_canaries, "num_canaries", minimum=1, maximum=MAX_CANARIES)
    r = check_count(num_guesses, "num_guesses", maximum=m)
    v = check_count(num_correct, "num_correct", maximum=r)
    delta = _check_delta(delta)
    confidence = check_probability(confidence, "confidence")
    epsilon = _largest_rejected(m, r, v, delta, np.log1p(-confidence))
    return OneRunBound(epsilon=epsilon, delta=delta, confidence=confidence, num_canaries=m, num_guesses=r, num_correct=v)


def epsilon_one_run_pure(num_guesses: Any, num_correct: Any, *, confidence: Any = 0.95) -> np.ndarray:
    """:func:`epsilon_one_run` at δ = 0 for arrays of (r, v), in closed form: the logit of the Clopper–Pearson lower limit of v/r.

    P[Bin(r, q) >= v] is the regularised incomplete beta I_q(v, r - v + 1), so
    the q at which it equals 1 - c is the Clopper–Pearson lower limit of v
    right in r (:func:`~privaudit.stats.intervals.binomial_lower_bound`), and
    ε = logit(q), 0 where that is negative or r = 0. One vectorised call in
    place of a root search per pair: it ranks many guess rules at once (m
    does not enter at δ = 0). It is not rounded down, so it ranks; the bound
    itself comes from :func:`epsilon_one_run`.

    >>> values = epsilon_one_run_pure([100, 100, 100], [100, 90, 50])
    >>> [round(float(value), 4) for value in values], round(epsilon_one_run(1000, 100, 90, delta=0.0).epsilon, 4)
    ([3.493, 1.6308, 0.0], 1.6308)
    """
    made, right = np.broadcast_arrays(np.asarray(num_guesses, dtype=np.float64), np.asarray(num_correct, dtype=np.float64))
    if np.any(made < 0) or np.any(right < 0) or np.any(right > made):
        raise ValueError("`num_correct` must be in [0, num_guesses] and `num_guesses` >= 0, elementwise")
    q = np.where(made >= 1, binomial_lower_bound(right, np.maximum(made, 1.0), confidence=confidence), 0.0)
    with np.errstate(divide="ignore"):
        logits: np.ndarray = np.maximum(0.0, np.log(q) - np.log1p(-q))
    return logits


def tie_safe_counts(descending: np.ndarray, counts: Any) -> np.ndarray:
    """Largest k' <= k, per k in ``counts``, such that the top k' scores all beat the others.

    Predicting on a prefix that ends inside a run of tied scores would let the
    array order (not the scores) choose, so prefixes are cut back to a tie.

    >>> tie_safe_counts(np.array([3.0, 2.0, 2.0, 1.0]), [1, 2, 3, 4])
    array([1, 1, 3, 4])
    """
    cuts = np.r_[0, np.flatnonzero(np.r_[descending[:-1] > descending[1:], True]) + 1]
    return np.asarray(cuts[np.searchsorted(cuts, counts, side="right") - 1])


def check_guess_counts(num_guesses: Any, num_canaries: int) -> np.ndarray:
    """The guess counts r to try, each in [1, m]; by default 10 sizes spaced evenly in log scale from 10 to m.

    >>> check_guess_counts(None, 1000)
    array([  10,   16,   27,   46,   77,  129,  215,  359,  599, 1000])
    """
    if num_guesses is None:
        return np.unique(np.geomspace(min(10, num_canaries), num_canaries, 10).astype(np.int64))
    values = np.atleast_1d(np.asarray(num_guesses, dtype=object))
    if values.size == 0:
        raise ValueError("`num_guesses` must hold at least 1 count, got 0")
    return np.array([check_count(r, "num_guesses", minimum=1, maximum=num_canaries) for r in values], dtype=np.int64)


def guess_outcomes(scores: np.ndarray, member: np.ndarray, requested: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Guesses made and right guesses for each requested count r (Steinke et al.'s k₊/k₋ attack).

    The round(r × ``fraction``) highest scores are guessed "in" and the rest
    of the r lowest "out"; each side is cut back so that no run of tied scores
    is split (see :func:`tie_safe_counts`).

    >>> scores = np.array([4.0, 3.0, 2.0, 1.0])
    >>> guess_outcomes(scores, np.array([True, False, True, False]), np.array([2, 4]), 0.5)
    (array([2, 4]), array([2, 2]))
    """
    order = np.argsort(-scores, kind="stable")
    descending, ordered = scores[order], member[order]
    members_in_top = np.r_[0, np.cumsum(ordered)]
    nonmembers_in_bottom = np.r_[0, np.cumsum(~ordered[::-1])]
    wanted_positive = np.array([int(round(r * fraction)) for r in requested], dtype=np.int64)
    positives = tie_safe_counts(descending, wanted_positive)
    negatives = tie_safe_counts(-descending[::-1], requested - wanted_positive)
    return positives + negatives, members_in_top[positives] + nonmembers_in_bottom[negatives]


@dataclasses.dataclass(frozen=True)
class OneRunSweep(OneRunBound):
    """The best of several guess counts, each tested at confidence 1 - (1 - c)/k.

    ``candidates`` holds (requested guesses, guesses made, right guesses,
    ε at the corrected level) per test; fewer guesses than requested are made
    when the cut would split tied scores.
    """

    num_tests: int = 1
    candidates: tuple[tuple[int, int, int, float], ...] = ()
    positive_fraction: float = 0.5
    valid: bool = True


def check_members(is_member: Any, shape: tuple[int, ...], *, min_per_side: int = 0) -> np.ndarray:
    """``is_member`` as a boolean array of ``shape``: booleans, or integers that are all 0 or 1.

    >>> check_members([1, 0, 1], (3,))
    array([ True, False,  True])
    >>> check_members([0.5, 1.0], (2,))
    Traceback (most recent call last):
    ...
    ValueError: `is_member` must be booleans (or integers 0/1), got dtype float64
    """
    try:
        member = np.asarray(is_member)
    except (TypeError, ValueError) as error:
        raise ValueError("`is_member` must be an array of booleans") from error
    if member.shape != shape:
        raise ValueError(f"`is_member` must have the same shape as the scores, {shape}, got {member.shape}")
    if member.dtype != bool and (member.dtype.kind not in "iu" or not np.isin(member, (0, 1)).all()):
        raise ValueError(f"`is_member` must be booleans (or integers 0/1), got dtype {member.dtype}")
    member = member.astype(bool)
    members = int(member.sum())
    if min(members, member.size - members) < min_per_side:
        raise ValueError(f"`is_member` must mark at least {min_per_side} canaries in and {min_per_side} out, got {members} in and {member.size - members} out")
    return member


def epsilon_one_run_sweep(
    scores: Any, is_member: Any, *, num_guesses: Any = None, positive_fraction: Any = 0.5, delta: Any, confidence: Any = 0.95
) -> OneRunSweep:
    """Sweep the number of guesses and keep the best one-run bound, with a Bonferroni correction.

    For each r in ``num_guesses`` the auditor guesses "in" for the
    round(r × ``positive_fraction``) highest scores and "out" for the rest of
    the r lowest, abstaining in between (Steinke et al.'s k₊/k₋ attack); each
    side is cut back so that no run of tied scores is split. Taking the best
    of k such tests is a multiple test, so each is run at confidence
    1 - (1 - c)/k and the best stays valid at confidence c.

    Parameters
    ----------
    scores : 1-D array
        Membership scores of the m canaries (higher = more likely in).
    is_member : 1-D array of bool
        Which canaries were included.
    num_guesses : sequence of int in [1, m], optional
        The guess counts r to try, fixed before looking at the data. Defaults
        to 10 sizes spaced evenly in log scale from 10 to m.
    positive_fraction : float in [0, 1]
        Share of each r spent on "in" guesses.
    delta : float in [0, 1)
    confidence : float in (0, 1)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(10_000) < 0.5
    >>> result = epsilon_one_run_sweep(member + rng.normal(0, 1, 10_000), member, delta=0.0)
    >>> result.num_tests, bool(result.epsilon > 1.0), result.valid
    (10, True, True)
    """
    scores = as_scores(scores, "scores")
    member = check_members(is_member, scores.shape)
    m = scores.size
    requested = check_guess_counts(num_guesses, m)
    fraction = check_fraction(positive_fraction, "positive_fraction")
    delta = _check_delta(delta)
    confidence = check_probability(confidence, "confidence")

    made, correct = guess_outcomes(scores, member, requested, fraction)
    log_level = np.log((1.0 - confidence) / requested.size)
    candidates = [
        (int(wanted), int(r), int(v), _largest_rejected(m, int(r), int(v), delta, log_level)) for wanted, r, v in zip(requested, made, correct, strict=True)
    ]
    best = max(candidates, key=lambda item: item[3])
    return OneRunSweep(
        epsilon=best[3],
        delta=delta,
        confidence=confidence,
        num_canaries=m,
        num_guesses=best[1],
        num_correct=best[2],
        num_tests=requested.size,
        candidates=tuple(candidates),
        positive_fraction=fraction,
    )
