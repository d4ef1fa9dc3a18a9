"""The guess rule of the mia bound modes, chosen on the reference models: which slots to guess "in", which "out", which to leave.

The calibration references train on balanced random halves of the pool, from
a seed of their own, so each one's membership of every audited record is
known and independent of the coins. Scored as if it were the target, by the
other references and z (:func:`privaudit.audits.mia.bounds.reference_slot_scores`),
each reference is a labelled replica of the target's slots. On these k
replicas every attack and every rule "out below ``low``, in above ``high``,
abstain between" (both thresholds on a grid of the replicas' score quantiles
and the midpoints between them)
is ranked by the worst replica's one-run bound, its counts scaled to the
target's slots (:func:`~privaudit.stats.one_run.epsilon_one_run_pure`, the
δ = 0 form, which ranks thousands of rules in one call), then by the mean.
The best rule is applied to the target's slots once: one test, no Bonferroni
correction, and no slot left out of the bound. Each threshold is known up to
the gap between two adjacent replica scores; it is placed in the middle of
the widest gap between the target's own scores there.

Validity: the rule is a function of the references and z, which do not
depend on the coins, so the guesses are a post-processing of the released
models and Steinke et al.'s test holds as for any guesser fixed in advance.

Power: one wrong guess costs about 10% of the bound at m = 300, one
abstention about 0.1%, so the rule is ranked by its worst replica, not its
mean: it leaves the scores where any replica made a mistake. A replica is
calibrated by k - 1 references, the target by k, so the replicas' scores are
a little noisier than the target's and the rule errs towards abstaining.

>>> rng = np.random.default_rng(0)
>>> coins = rng.random((8, 300)) < 0.5
>>> replicas = {"loss": coins + rng.normal(0, 0.05, coins.shape)}  # a perfect attack
>>> chosen, table = choose_rule(replicas, coins, num_slots=300, confidence=0.95)
>>> target_coins = rng.random(300) < 0.5
>>> target_scores = target_coins + rng.normal(0, 0.05, 300)
>>> rule = chosen.place(target_scores)
>>> bound = rule.bound(target_scores, target_coins, delta=1e-5, confidence=0.95)
>>> rule.attack, bound.candidates[0][1:3], round(bound.epsilon, 2)
('loss', (300, 300), 4.59)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ...stats.metrics import roc_auc
from ...stats.one_run import epsilon_one_run_pure
from ...stats.one_run_combined import OneRunLowerBound, one_run_lower_bound
from .config import BOUND_METHODS

__all__ = ["PREFERENCE", "RULE_QUANTILES", "ReplicaRule", "ThresholdRule", "choose_rule", "slot_bound"]

#: The attacks the rule chooses among, in the order that breaks ties: the headline attack first.
PREFERENCE = ("rmia-online", "lira-online", "rmia-offline", "lira-offline", "loss")
#: The quantiles of the replicas' scores that the thresholds are chosen among (with the midpoints between them).
RULE_QUANTILES = np.linspace(0.02, 0.98, 64)


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


@dataclasses.dataclass(frozen=True)
class ThresholdRule:
    """Guess "out" below ``low``, "in" above ``high``, abstain between (scores of ``attack``).

    >>> rule = ThresholdRule("loss", 0.0, 1.0)
    >>> [mask.tolist() for mask in rule.guesses(np.array([-1.0, 0.5, 2.0, 3.0]))]
    [[False, False, True, True], [True, False, False, False]]
    """

    attack: str
    low: float
    high: float

    def guesses(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(guessed "in", guessed "out") masks of ``scores``."""
        values = np.asarray(scores, dtype=np.float64)
        return values > self.high, values < self.low

    def bound(self, scores: np.ndarray, coins: np.ndarray, *, delta: float, confidence: float) -> OneRunLowerBound:
        """Steinke et al.'s test of these slots through the rule: one test, m = every slot."""
        values = np.asarray(scores, dtype=np.float64).ravel()
        inside, outside = self.guesses(values)
        made = int(inside.sum() + outside.sum())
        # the thresholds never split tied scores, so the k₊/k₋ attack on these counts makes exactly these guesses
        bound = slot_bound(values, coins, delta=delta, confidence=confidence, num_guesses=[max(made, 1)], positive_fraction=inside.sum() / max(made, 1))
        if made == 0:  # every slot abstained on: no test is made, the bound is 0
            return dataclasses.replace(bound, epsilon=0.0, candidates=(("steinke", 0, 0, 0.0),))
        return bound


@dataclasses.dataclass(frozen=True)
class ReplicaRule:
    """The rule chosen on the replicas, each threshold known up to the gap between two adjacent replica scores it lies in.

    Anywhere in its gap a threshold guesses alike on every replica; :meth:`place`
    puts it in the middle of the widest gap between the target's own scores
    there (their scores, never their coins).

    >>> ReplicaRule("loss", (-1.0, 1.0), (-1.0, 1.0)).place(np.array([-3.0, -0.8, 0.9, 2.0]))
    ThresholdRule(attack='loss', low=0.04999999999999999, high=0.04999999999999999)
    """

    attack: str
    low: tuple[float, float]
    high: tuple[float, float]

    def place(self, scores: np.ndarray) -> ThresholdRule:
        values = np.asarray(scores, dtype=np.float64).ravel()
        low = _middle_of_widest_gap(self.low, values)
        return ThresholdRule(self.attack, low, low if self.high == self.low else _middle_of_widest_gap(self.high, values))


def _middle_of_widest_gap(gap: tuple[float, float], values: np.ndarray) -> float:
    points = np.sort(np.r_[gap[0], values[(values > gap[0]) & (values < gap[1])], gap[1]])
    widest = int(np.argmax(np.diff(points))) if points.size > 1 else 0
    return float(0.5 * (points[widest] + points[min(widest + 1, points.size - 1)]))


def _gap(threshold: float, ordered: np.ndarray) -> tuple[float, float]:
    """The adjacent replica scores around ``threshold`` ((t, t) where it is a score itself: moving it would change a guess)."""
    below, above = np.searchsorted(ordered, threshold, side="left"), np.searchsorted(ordered, threshold, side="right")
    if below != above:
        return threshold, threshold
    return float(ordered[below - 1]) if below > 0 else threshold, float(ordered[above]) if above < ordered.size else threshold


def _counts(scores: np.ndarray, coins: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per replica and threshold: slots above it, members above it, slots below it, non-members below it."""
    rows = []
    for values, member in zip(scores, coins, strict=True):
        every, ins, outs = np.sort(values), np.sort(values[member]), np.sort(values[~member])
        rows.append(
            (
                every.size - np.searchsorted(every, thresholds, side="right"),
                ins.size - np.searchsorted(ins, thresholds, side="right"),
                np.searchsorted(every, thresholds, side="left"),
                np.searchsorted(outs, thresholds, side="left"),
            )
        )
    return tuple(np.array(column) for column in zip(*rows, strict=True))


def _best_thresholds(scores: np.ndarray, coins: np.ndarray, num_slots: int, confidence: float) -> tuple[float, float, tuple[float, float], tuple[float, float]]:
    """(worst replica's value, mean value, low's gap, high's gap) of the best rule of one attack over the quantile grid."""
    grid = np.unique(np.quantile(scores, RULE_QUANTILES))
    thresholds = np.sort(np.r_[grid, 0.5 * (grid[:-1] + grid[1:])])  # the midpoints too: a gap between the sides holds no quantile
    above, members_above, below, others_below = _counts(scores, coins, thresholds)
    low, high = np.triu_indices(thresholds.size)  # low <= high
    scale = num_slots / scores.shape[1]  # a replica has the target's audited records; the target may have several trial models
    made = np.round(scale * (below[:, low] + above[:, high]))
    right = np.round(scale * (others_below[:, low] + members_above[:, high]))
    values = epsilon_one_run_pure(made, right, confidence=confidence)
    worst, mean = values.min(axis=0), values.mean(axis=0)
    top = int(np.lexsort((mean, worst))[-1])
    # rules that guess alike on every replica tie: take the middle one, whose thresholds sit deepest in the gaps the replicas leave
    tied = np.flatnonzero((worst == worst[top]) & (mean == mean[top]))
    middle = tied[np.argmin(np.abs(low[tied] - np.median(low[tied])) + np.abs(high[tied] - np.median(high[tied])))]
    ordered = np.sort(scores, axis=None)
    return float(worst[middle]), float(mean[middle]), _gap(thresholds[low[middle]], ordered), _gap(thresholds[high[middle]], ordered)


def choose_rule(
    replica_scores: dict[str, np.ndarray], replica_coins: np.ndarray, *, num_slots: int, confidence: float
) -> tuple[ReplicaRule, tuple[tuple[str, float, float, float], ...]]:
    """The best (attack, thresholds) on the replicas, and per attack (name, worst replica's value, mean value, AUC over the replicas).

    ``replica_scores`` maps each attack (those of :data:`PREFERENCE` first, in its order) to its (k, a)
    scores of the k replicas; ``replica_coins`` (k, a) their membership;
    ``num_slots`` the target's slots the rule will guess on.
    """
    coins = np.asarray(replica_coins, dtype=bool)
    table, rules = [], {}
    for name in sorted(replica_scores, key=lambda name: PREFERENCE.index(name) if name in PREFERENCE else len(PREFERENCE)):
        scores = np.asarray(replica_scores[name], dtype=np.float64)
        worst, mean, low, high = _best_thresholds(scores, coins, num_slots, confidence)
        rules[name] = ReplicaRule(name, low, high)
        table.append((name, worst, mean, float(roc_auc(scores[coins], scores[~coins]))))
    # the largest worst value, then the largest mean, then the earlier in PREFERENCE (max keeps the first of equals)
    best = max(table, key=lambda row: row[1:3])
    return rules[best[0]], tuple(table)
