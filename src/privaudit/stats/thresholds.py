"""Threshold strategies for membership-inference audits, as option values.

A threshold t turns scores into decisions: predict "in" (member) when
score >= t. Then a false positive is an "out" score >= t and a false
negative an "in" score < t.

Choosing t on the same observations that are then bounded makes the bound
optimistic. The strategies differ in how they avoid (or flag) that:

* a float: fixed in advance, every observation is used for the bound;
* :class:`Split`: chosen on a seeded held-out fraction, bounded on the rest;
* :class:`Bonferroni`: several thresholds, each tested at confidence
  1 - (1 - c)/k, so the best of them is still valid at confidence c. They
  are given, picked on a held-out fraction, or placed at ranks fixed in
  advance (``over="ranks"``: a geometric grid of false-positive counts from
  the top of the out-scores and of false-negative counts from the bottom of
  the in-scores; ``over="all"``: every such rank), using every observation;
* :class:`MultiSplit`: the lower median of several seeded splits, each at
  confidence 1 - (1 - c)/2, valid at confidence c by Markov's inequality;
* :class:`Best`: the best of many thresholds on the same data. Optimistic;
  results carry ``valid=False``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._core.validation import check_count, check_real

__all__ = ["Best", "Bonferroni", "MultiSplit", "Split", "candidate_thresholds", "error_counts", "rank_grid", "resolve_threshold", "top_thresholds"]

#: Upper limit on thresholds scored by a search; keeps 10⁶ observations well under a second.
MAX_CANDIDATES = 4096
_RUNS = (32, 8)  # run lengths of the pruned search in top_thresholds, coarse to fine


def _check_fraction_open(value: float, name: str) -> float:
    number = check_real(value, name)
    if not 0.0 < number < 1.0:
        raise ValueError(f"`{name}` must be in (0, 1), got {number:g}")
    return number


@dataclasses.dataclass(frozen=True)
class Split:
    """Choose the threshold on a seeded held-out ``fraction`` of each side, bound on the rest.

    >>> Split(fraction=0.3)
    Split(fraction=0.3)
    """

    fraction: float = 0.2

    def __post_init__(self) -> None:
        _check_fraction_open(self.fraction, "fraction")


@dataclasses.dataclass(frozen=True)
class Bonferroni:
    """Test k thresholds, each at confidence 1 - (1 - c)/k, and report the best.

    With ``thresholds`` given, they are fixed in advance and all observations
    are used. With ``over="held-out"`` (the default) the ``num_thresholds``
    most promising thresholds are picked on a held-out ``fraction`` and
    tested on the rest. With ``over="ranks"`` the thresholds sit at ranks
    fixed in advance, ``num_thresholds`` of them, and every observation is
    used; ``over="all"`` takes every rank (k = number of observations).

    A threshold at the j-th highest out-score has a false-positive rate
    distributed as Beta(j, n - j + 1) for continuous scores, which the
    Clopper–Pearson bound at j false positives covers; tied scores are
    ordered by a seeded coin, which makes the test a randomised one without
    changing what it may claim.

    >>> Bonferroni(thresholds=(0.5, 1.0)).num_tests
    2
    >>> Bonferroni(over="ranks")
    Bonferroni(thresholds=None, num_thresholds=32, fraction=0.25, over='ranks')
    """

    thresholds: tuple[float, ...] | None = None
    num_thresholds: int = 16
    fraction: float = 0.25
    over: str = "held-out"

    def __post_init__(self) -> None:
        if self.over not in ("held-out", "ranks", "all"):
            raise ValueError(f"`over` must be one of 'held-out', 'ranks', 'all', got {self.over!r}")
        if self.thresholds is not None:
            values = tuple(check_real(t, "thresholds") for t in np.ravel(self.thresholds))
            if not values:
                raise ValueError("`thresholds` must hold at least 1 value, got 0")
            object.__setattr__(self, "thresholds", values)
        if self.over == "ranks" and self.num_thresholds == 16 and self.thresholds is None:
            object.__setattr__(self, "num_thresholds", 32)  # ranks use all data; a finer grid pays for itself
        check_count(self.num_thresholds, "num_thresholds", minimum=2 if self.over == "ranks" else 1)
        _check_fraction_open(self.fraction, "fraction")

    @property
    def num_tests(self) -> int:
        return len(self.thresholds) if self.thresholds is not None else self.num_thresholds


@dataclasses.dataclass(frozen=True)
class MultiSplit:
    """The lower median of ``num_splits`` seeded :class:`Split` bounds, each at confidence 1 - (1 - c)/2.

    If each split's bound exceeds the truth with probability at most
    (1 - c)/2, the median exceeds it only when half of them do, which by
    Markov's inequality has probability at most 1 - c. Averaging over splits
    removes most of the luck of a single split.

    >>> MultiSplit()
    MultiSplit(num_splits=10, fraction=0.2)
    """

    num_splits: int = 10
    fraction: float = 0.2

    def __post_init__(self) -> None:
        check_count(self.num_splits, "num_splits", minimum=1)
        _check_fraction_open(self.fraction, "fraction")


def rank_grid(size: int, count: int) -> np.ndarray:
    """``count`` ranks in [1, size], geometrically spaced from 1 (fewer where they repeat).

    >>> rank_grid(1000, 4)
    array([   1,   10,  100, 1000])
    """
    return np.unique(np.round(np.geomspace(1, size, count)).astype(np.int64))


@dataclasses.dataclass(frozen=True)
class Best:
    """Take the best threshold on the same data. Optimistic: results are flagged ``valid=False``.

    >>> Best()
    Best()
    """


_NAMED = {"split": Split, "bonferroni": Bonferroni, "multi-split": MultiSplit, "best": Best}


def resolve_threshold(threshold: Any) -> Any:
    """Turn the ``threshold`` argument into a float or a strategy object.

    >>> resolve_threshold("split"), resolve_threshold(0.5)
    (Split(fraction=0.2), 0.5)
    >>> resolve_threshold("median")
    Traceback (most recent call last):
    ...
    ValueError: `threshold` must be a finite number or one of 'split', 'bonferroni', 'multi-split', 'best', got 'median'
    """
    if isinstance(threshold, (Split, Bonferroni, MultiSplit, Best)):
        return threshold
    if isinstance(threshold, str):
        if threshold in _NAMED:
            return _NAMED[threshold]()
    elif not isinstance(threshold, bool):
        try:
            value = float(threshold)
        except (TypeError, ValueError):
            value = np.nan
        if np.isfinite(value):
            return value
    names = ", ".join(repr(name) for name in _NAMED)
    raise ValueError(f"`threshold` must be a finite number or one of {names}, got {threshold!r}")


def error_counts(in_sorted: np.ndarray, out_sorted: np.ndarray, thresholds: Any) -> tuple[np.ndarray, np.ndarray]:
    """False positives (#out >= t) and false negatives (#in < t) for sorted scores.

    >>> error_counts(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.0]), [2.0])
    (array([1]), array([1]))
    """
    thresholds = np.asarray(thresholds, dtype=np.float64)
    false_positives = out_sorted.size - np.searchsorted(out_sorted, thresholds, side="left")
    false_negatives = np.searchsorted(in_sorted, thresholds, side="left")
    return false_positives, false_negatives


def candidate_thresholds(in_sorted: np.ndarray, out_sorted: np.ndarray) -> np.ndarray:
    """Distinct pooled scores to try as thresholds, at most ``MAX_CANDIDATES``.

    With more distinct scores than that, keep evenly spaced ranks plus
    geometrically spaced ranks at both ends, where the extreme thresholds that
    (ε, δ) audits need live.

    >>> candidate_thresholds(np.array([1.0, 2.0]), np.array([2.0, 3.0]))
    array([1., 2., 3.])
    """
    pooled = np.unique(np.concatenate([in_sorted, out_sorted]))
    if pooled.size <= MAX_CANDIDATES:
        return pooled
    last = pooled.size - 1
    tail = np.unique(np.geomspace(1, pooled.size, MAX_CANDIDATES // 4).astype(np.int64)) - 1
    ranks = np.concatenate([np.linspace(0, last, MAX_CANDIDATES // 2).astype(np.int64), tail, last - tail])
    return np.asarray(pooled[np.unique(ranks)])


def held_out_split(scores: np.ndarray, fraction: float, rng: np.random.Generator, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Split ``scores`` at random into (selection, evaluation), both non-empty."""
    size = scores.size
    num_selection = int(round(fraction * size))
    if num_selection < 1 or num_selection > size - 1:
        raise ValueError(f"`{name}` must hold enough observations to split by fraction {fraction:g} (at least 1 on each side), got {size}")
    order = rng.permutation(size)
    return scores[order[:num_selection]], scores[order[num_selection:]]


def top_thresholds(bounds_of: Any, score_of: Any, false_positives: np.ndarray, false_negatives: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` best thresholds, as ``np.argsort(-score, kind="stable")[:count]``, bounding few of them.

    ``bounds_of(fp, fn)`` turns error counts into error-rate bounds (ᾱ, β̄),
    each never falling as its count rises, and ``score_of(ᾱ, β̄)`` scores
    them, never rising as either rises; both work elementwise. The thresholds
    are in ascending order, so false positives fall and false negatives rise
    along them. A run of consecutive thresholds then scores at most
    ``score_of`` of the ᾱ at its end and the β̄ at its start. The ends of every
    run are bounded first; runs whose cap falls below the ``count``-th best
    of those cannot hold a winner and are dropped, and so are runs whose cap
    is reached by ``count`` ends before them (ties keep the lower index, as
    the stable sort does). Runs of 32, then of 8, then the thresholds left
    are scored in full.

    >>> fp, fn = np.arange(1000)[::-1], np.arange(1000)
    >>> identity, score = (lambda f, n: (f, n)), (lambda f, n: -np.abs(f - 2 * n).astype(float))  # best at index 333
    >>> top_thresholds(identity, score, fp, fn, 3).tolist(), np.argsort(-score(fp, fn), kind="stable")[:3].tolist()
    ([333, 332, 334], [333, 332, 334])
    """
    size = false_positives.size
    fpr, fnr, known = np.zeros(size), np.zeros(size), np.zeros(size, dtype=bool)

    def bounded(indices: np.ndarray) -> np.ndarray:
        missing = indices[~known[indices]]
        fpr[missing], fnr[missing] = bounds_of(false_positives[missing], false_negatives[missing])
        known[missing] = True
        return indices

    indices = np.arange(size)
    for run in _RUNS:
        if indices.size <= 4 * run:
            break
        starts = np.arange(0, indices.size, run)
        first, last = indices[starts], indices[np.minimum(starts + run, indices.size) - 1]
        probes = bounded(np.unique(np.concatenate([first, last])))
        probe_scores = score_of(fpr[probes], fnr[probes])
        bar = np.sort(probe_scores)[::-1][min(count, probes.size) - 1]
        caps = score_of(fpr[last], fnr[first])
        # a run below the bar by a relative 1e-9 (float slack) cannot win; nor one whose cap ties or trails
        # ``count`` probes before it, which win the ties by their lower index (null data: every score is 0)
        beaten_earlier = np.sum((probes[None, :] < first[:, None]) & (probe_scores[None, :] >= caps[:, None]), axis=1) >= count
        reaching = ~((caps < bar - 1e-9 * (1.0 + abs(bar))) | beaten_earlier)
        kept = [indices[start : start + run] for start, keep in zip(starts, reaching, strict=True) if keep]
        indices = np.unique(np.concatenate([probes, *kept]))
    bounded(indices)
    return indices[np.argsort(-score_of(fpr[indices], fnr[indices]), kind="stable")[:count]]
