"""The guess rule of the mia bound modes: how an attack's slot scores become Steinke et al.'s guesses, fixed on pilot slots.

A guess rule must not read the coins of the slots it guesses. Here it is a
function of those slots' scores (a post-processing of the released models)
and of the pilot slots' scores and coins, which the bound does not use
(:func:`privaudit.audits.mia.bounds.design_bound`): the pilot's best cut
and the share of the pilot its best guess count guessed. Applied to the
held-out slots, it splits each guess count between "in" and "out" in the
proportion of their scores above the cut, and tries :data:`GUESS_SHARES` of
that share, Bonferroni over them.

>>> rng = np.random.default_rng(0)
>>> coins = rng.random(300) < 0.5
>>> scores = coins + rng.normal(0, 0.05, 300)  # a perfect attack
>>> bound, auc, rule = pilot_value(scores[:45], coins[:45], delta=1e-5, confidence=0.95)
>>> rule.share, rule.bound(scores[45:], coins[45:], delta=1e-5, confidence=0.95).candidates[-1][1:3]
(1.0, (255, 255))
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ...stats.metrics import roc_auc
from ...stats.one_run_combined import OneRunLowerBound, one_run_lower_bound
from .config import BOUND_METHODS

__all__ = ["GUESS_SHARES", "GuessRule", "pilot_cut", "pilot_value", "slot_bound"]

#: The guess counts of the held-out bound, as shares of the share the pilot's best count guessed (Bonferroni over these 2).
GUESS_SHARES = (0.8, 1.0)


def slot_bound(
    scores: np.ndarray, coins: np.ndarray, *, delta: float, confidence: float, num_guesses: Any = None, positive_fraction: float = 0.5
) -> OneRunLowerBound:
    """The one-run lower bound of every slot pooled (m = all slots), Steinke et al.'s test at ``delta`` and ``confidence``.

    ``num_guesses`` and ``positive_fraction`` are the guess rule of
    :func:`~privaudit.stats.one_run_combined.one_run_lower_bound` (by default
    10 counts from 10 to m, half of each guessed "in").

    >>> rng = np.random.default_rng(1)
    >>> coins = rng.random((2, 500)) < 0.5
    >>> bound = slot_bound(coins + rng.normal(0, 0.5, coins.shape), coins, delta=1e-5, confidence=0.95)
    >>> bound.num_canaries, bound.method, bound.epsilon > 1.0
    (1000, 'steinke', True)
    """
    member = np.asarray(coins, dtype=bool).ravel()
    if min(int(member.sum()), int((~member).sum())) < 2:
        raise ValueError(f"the fair coins left fewer than 2 slots on a side ({int(member.sum())} in of {member.size}); raise `num_canaries`")
    values = np.asarray(scores, dtype=np.float64).ravel()
    return one_run_lower_bound(
        values, member, delta=delta, confidence=confidence, methods=BOUND_METHODS, num_guesses=num_guesses, positive_fraction=positive_fraction
    )


def pilot_cut(scores: np.ndarray, coins: np.ndarray) -> tuple[float, float]:
    """The two adjacent pilot scores between which a cut guesses the most pilot slots right when every slot is guessed ("in" above it).

    >>> pilot_cut(np.array([0.1, 0.4, 0.9, 1.2]), np.array([False, False, True, True]))
    (0.4, 0.9)
    """
    order = np.argsort(scores, kind="stable")
    ordered, member = np.asarray(scores, dtype=np.float64)[order], np.asarray(coins, dtype=bool)[order]
    # right guesses when the i lowest are guessed "out" and the rest "in"
    right = np.r_[0, np.cumsum(~member)] + np.r_[np.cumsum(member[::-1])[::-1], 0]
    i = int(np.argmax(right))
    if i in (0, ordered.size):  # every pilot slot on one side: a cut just past the end, no gap to refine
        edge = float(ordered[0] - 1.0 if i == 0 else ordered[-1] + 1.0)
        return edge, edge
    return float(ordered[i - 1]), float(ordered[i])


@dataclasses.dataclass(frozen=True)
class GuessRule:
    """How an attack guesses, fixed on the pilot slots: its cut, between the pilot scores ``low`` and ``high``, and its share of guesses.

    Applied to m slots, it guesses at the counts ``GUESS_SHARES`` × ``share`` × m
    (Bonferroni over them), each count split between "in" and "out" in the
    proportion of the slots above the cut, so an unequal draw of coins is not
    forced into wrong guesses. The cut is the middle of the widest gap between
    the slots' own scores in (``low``, ``high``): the pilot's best cut,
    refined by the scores (never the coins) of the slots it guesses.

    >>> rule = GuessRule(0.0, 1.0, 1.0)
    >>> rule.cut(np.array([-1.0, 0.1, 0.2, 0.8, 2.0])), rule.positive_fraction(np.array([-1.0, 0.1, 0.2, 0.8, 2.0]))
    (0.5, 0.4)
    >>> rule.counts(300).tolist()
    [240, 300]
    """

    low: float
    high: float
    share: float

    def cut(self, scores: np.ndarray) -> float:
        values = np.asarray(scores, dtype=np.float64).ravel()
        points = np.sort(np.r_[self.low, values[(values > self.low) & (values < self.high)], self.high])
        widest = int(np.argmax(np.diff(points))) if points.size > 1 else 0
        return float(0.5 * (points[widest] + points[min(widest + 1, points.size - 1)]))

    def counts(self, num_slots: int) -> np.ndarray:
        return np.unique(np.clip(np.round(np.asarray(GUESS_SHARES) * self.share * num_slots).astype(np.int64), 1, num_slots))

    def positive_fraction(self, scores: np.ndarray) -> float:
        values = np.asarray(scores, dtype=np.float64).ravel()
        return float(np.mean(values > self.cut(values)))

    def bound(self, scores: np.ndarray, coins: np.ndarray, *, delta: float, confidence: float, num_guesses: Any = "rule") -> OneRunLowerBound:
        """Steinke et al.'s test of these slots through the rule (``num_guesses=None``: the default sweep of counts instead)."""
        counts = self.counts(np.asarray(coins).size) if isinstance(num_guesses, str) else num_guesses
        return slot_bound(scores, coins, delta=delta, confidence=confidence, num_guesses=counts, positive_fraction=self.positive_fraction(scores))


def pilot_value(scores: np.ndarray, coins: np.ndarray, *, delta: float, confidence: float) -> tuple[float, float, GuessRule]:
    """(one-run bound, AUC, guess rule) of an attack on the pilot slots; (0, ½, the median cut) where a side has fewer than 2 slots.

    The pilot's bound sweeps the default guess counts through the pilot's own
    cut; the count that wins there, as a share of the pilot, is the rule's share.
    """
    if min(int(coins.sum()), int((~coins).sum())) < 2:
        middle = float(np.median(scores))
        return 0.0, 0.5, GuessRule(middle, middle, 1.0)
    auc = float(roc_auc(scores[coins], scores[~coins]))
    low, high = pilot_cut(scores, coins)
    bound = GuessRule(low, high, 1.0).bound(scores, coins, delta=delta, confidence=confidence, num_guesses=None)
    made = max((item[1] for item in bound.candidates if item[3] == bound.epsilon), default=coins.size)
    share = made / coins.size if bound.epsilon > 0 else 1.0
    return bound.epsilon, auc, GuessRule(low, high, float(share))
