"""The one-run ε lower bound of Steinke, Nasr and Jagielski (2023), as quoted in PANORAMIA §2.

m canaries are each included in training independently with probability ½.
The auditor guesses "in" or "out" for r of them and abstains on the rest; v
guesses are right. If training is ε-DP, the number of right guesses is
stochastically dominated by Binomial(r, q) with q = e^ε/(1 + e^ε) (their
Proposition 5.1). With δ > 0 the p-value gains a term (their Theorem 5.2 and
Appendix D):

    p(ε) = P[Bin(r, q) >= v] + 2 m δ · max_{1 <= i <= v} P[v - i <= Bin(r, q) < v] / i.

ε is rejected at confidence c when p(ε) <= 1 - c; the bound is the largest
rejected ε, found by a bracketed root search in the log domain and rounded
down. Every probability is computed from ``scipy.stats.binom.logpmf``/``logsf``,
so v far in the tail (m = 10⁵ and beyond) neither underflows nor overflows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import optimize, special, stats  # noqa: F401  (special: used by the doctests)

from ._result import Result
from ._validation import as_scores, check_count, check_positive, check_probability

__all__ = ["OneRunBound", "OneRunSweep", "epsilon_one_run", "epsilon_one_run_sweep"]

_XTOL = 1e-10
_MAX_EPSILON = 1e3


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
    root = optimize.brentq(gap, 0.0, high, xtol=_XTOL)
    return max(0.0, root - 2 * _XTOL)


def _check_delta(delta) -> float:
    delta = check_positive(delta, "delta", allow_zero=True)
    if delta >= 1.0:
        raise ValueError(f"`delta` must be in [0, 1), got {delta:g}")
    return delta


def epsilon_one_run(num_canaries, num_guesses, num_correct, *, delta, confidence=0.95) -> OneRunBound:
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

    >>> result = epsilon_one_run(1000, 100, 100, delta=0.0)
    >>> round(result.epsilon, 4), round(float(special.logit(0.05 ** (1 / 100))), 4)
    (3.493, 3.493)
    >>> epsilon_one_run(1000, 100, 50, delta=1e-5).epsilon  # chance level
    0.0
    """
    m = check_count(num_canaries, "num_canaries", minimum=1)
    r = check_count(num_guesses, "num_guesses", maximum=m)
    v = check_count(num_correct, "num_correct", maximum=r)
    delta = _check_delta(delta)
    confidence = check_probability(confidence, "confidence")
    epsilon = _largest_rejected(m, r, v, delta, np.log1p(-confidence))
    return OneRunBound(epsilon=epsilon, delta=delta, confidence=confidence, num_canaries=m, num_guesses=r, num_correct=v)


@dataclasses.dataclass(frozen=True)
class OneRunSweep(OneRunBound):
    """The best of several guess counts, each tested at confidence 1 - (1 - c)/k.

    ``candidates`` holds (num_guesses, num_correct, ε at the corrected level) per test.
    """

    num_tests: int = 1
    candidates: tuple = ()
    positive_fraction: float = 0.5
    valid: bool = True


def epsilon_one_run_sweep(
    scores, is_member, *, num_guesses=None, positive_fraction=0.5, delta, confidence=0.95
) -> OneRunSweep:
    """Sweep the number of guesses and keep the best one-run bound, with a Bonferroni correction.

    For each r in ``num_guesses`` the auditor guesses "in" for the
    round(r × ``positive_fraction``) highest scores and "out" for the rest of
    the r lowest, abstaining in between (Steinke et al.'s k₊/k₋ attack).
    Taking the best of k such tests is a multiple test, so each is run at
    confidence 1 - (1 - c)/k and the best stays valid at confidence c.

    Parameters
    ----------
    scores : 1-D array
        Membership scores of the m canaries (higher = more likely in).
    is_member : 1-D array of bool
        Which canaries were included.
    num_guesses : sequence of int, optional
        Defaults to 10 sizes spaced evenly in log scale from 10 to m.

    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(10_000) < 0.5
    >>> result = epsilon_one_run_sweep(member + rng.normal(0, 1, 10_000), member, delta=0.0)
    >>> result.num_tests, bool(result.epsilon > 1.0)
    (10, True)
    """
    scores = as_scores(scores, "scores")
    member = np.asarray(is_member)
    if member.shape != scores.shape or not (member.dtype == bool or np.isin(member, (0, 1)).all()):
        raise ValueError(f"`is_member` must be a boolean array of shape {scores.shape}, got {member!r}")
    member = member.astype(bool)
    m = scores.size
    if num_guesses is None:
        num_guesses = np.unique(np.geomspace(min(10, m), m, 10).astype(np.int64))
    guesses = [check_count(r, "num_guesses", minimum=1, maximum=m) for r in np.atleast_1d(num_guesses)]
    fraction = check_positive(positive_fraction, "positive_fraction", allow_zero=True)
    if fraction > 1.0:
        raise ValueError(f"`positive_fraction` must be in [0, 1], got {fraction:g}")
    delta = _check_delta(delta)
    confidence = check_probability(confidence, "confidence")

    ordered = member[np.argsort(-scores, kind="stable")]
    members_in_top = np.r_[0, np.cumsum(ordered)]
    nonmembers_in_bottom = np.r_[0, np.cumsum(~ordered[::-1])]
    log_level = np.log((1.0 - confidence) / len(guesses))
    candidates = []
    for r in guesses:
        positives = int(round(r * fraction))
        correct = int(members_in_top[positives] + nonmembers_in_bottom[r - positives])
        candidates.append((r, correct, _largest_rejected(m, r, correct, delta, log_level)))
    best = max(candidates, key=lambda item: item[2])
    return OneRunSweep(
        epsilon=best[2],
        delta=delta,
        confidence=confidence,
        num_canaries=m,
        num_guesses=best[0],
        num_correct=best[1],
        num_tests=len(guesses),
        candidates=tuple(candidates),
        positive_fraction=fraction,
    )
