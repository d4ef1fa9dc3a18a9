"""From samples of a mechanism on D and D' to an ε lower bound and a verdict on a claim.

The samples of each side come in two independent sets: pilot samples and
held-out samples. The pilot is split in two halves: on the first the
statistics are fitted (:mod:`.statistics`, :mod:`.learned`), on the second
each statistic's thresholds are chosen, in each direction: D as "in"
against D' as "out", and D' as "in" against D as "out". Each (statistic,
direction) is one test, ranked by the bound its thresholds promise on the
pilot; with ``tests_kept`` only the T most promising are kept (the family
is fixed on the pilot alone, before the held-out samples are seen). Each
kept test's held-out scores go through
:func:`privaudit.stats.bounds.epsilon_lower_bound` with the thresholds fixed
in advance (``Bonferroni(thresholds=...)``), at confidence 1 - (1 - c)/T,
so the largest of the bounds is a lower bound at confidence c (Bonferroni
over everything bounded). The claim is rejected at confidence c when that
bound exceeds the claimed ε; a correct mechanism is then rejected with
probability at most 1 - c.

>>> rng = np.random.default_rng(1)
>>> def laplace(scale, shift, size):
...     return shift + rng.laplace(0.0, scale, size)
>>> outcome = bound_samples(laplace(0.5, 1, 4000), laplace(0.5, 0, 4000), laplace(0.5, 1, 4000), laplace(0.5, 0, 4000), claim=Claim(epsilon=1.0))
>>> outcome.rejected, bool(1.0 < outcome.epsilon < 2.0)  # Laplace with half the scale of a claim of ε = 1: true ε = 2
(True, True)
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats

from ..stats.bounds import EpsilonLowerBound, epsilon_lower_bound
from ..stats.families import EpsilonDelta
from ..stats.intervals import binomial_upper_bound
from ..stats.thresholds import Bonferroni, candidate_thresholds, error_counts
from .claims import Claim
from .statistics import TableFeatures, features, fit_statistics

__all__ = ["DIRECTIONS", "PURE_DELTA", "SampleTest", "SamplesOutcome", "choose_thresholds", "bound_samples"]

DIRECTIONS = ("D in, D' out", "D' in, D out")
#: the δ handed to the bound's interface for a pure-DP claim (the "pure" family ignores it)
PURE_DELTA = 1e-300


@dataclasses.dataclass(frozen=True)
class SampleTest:
    """One test: a statistic in one direction, and its bound on the held-out samples."""

    statistic: str
    direction: str
    bound: EpsilonLowerBound


@dataclasses.dataclass(frozen=True, eq=False)
class SamplesOutcome:
    """Every test, the largest bound, the verdict, and the best test's held-out scores (for the figures)."""

    tests: tuple[SampleTest, ...]
    best: int
    claim: Claim
    confidence: float
    scores_in: np.ndarray
    scores_out: np.ndarray
    tried: tuple[tuple[str, str, float], ...] = ()  # every (statistic, direction) and the bound its pilot promised

    @property
    def epsilon(self) -> float:
        return float(self.tests[self.best].bound.epsilon)

    @property
    def rejected(self) -> bool:
        return self.epsilon > self.claim.tested_epsilon


def choose_thresholds(
    pilot_in: np.ndarray, pilot_out: np.ndarray, eval_sizes: tuple[int, int], *, delta: float, confidence: float, count: int
) -> tuple[float, ...]:
    """The ``count`` thresholds that promise the largest bound on ``eval_sizes`` held-out samples, chosen on pilot scores.

    Each candidate's error rates are bounded from above on the pilot, then
    as if that many errors were seen among the held-out samples: a
    threshold in the far tail, lucky on a small pilot, is not preferred.

    >>> rng = np.random.default_rng(0)
    >>> choose_thresholds(rng.normal(3, 1, 1000), rng.normal(0, 1, 1000), (1000, 1000), delta=1e-5, confidence=0.95, count=2)
    (..., ...)
    """
    return _promising(pilot_in, pilot_out, eval_sizes, delta=delta, confidence=confidence, count=count)[0]


def _promising(
    pilot_in: np.ndarray, pilot_out: np.ndarray, eval_sizes: tuple[int, int], *, delta: float, confidence: float, count: int
) -> tuple[tuple[float, ...], float]:
    """:func:`choose_thresholds`'s thresholds and the largest projected bound they promise."""
    in_sorted, out_sorted = np.sort(pilot_in), np.sort(pilot_out)
    candidates = candidate_thresholds(in_sorted, out_sorted)
    fp, fn = error_counts(in_sorted, out_sorted, candidates)
    fpr = binomial_upper_bound(fp, out_sorted.size, confidence=confidence)
    fnr = binomial_upper_bound(fn, in_sorted.size, confidence=confidence)
    n_in, n_out = eval_sizes
    projected_fpr = _projected_upper(fpr, n_out, confidence)
    projected_fnr = _projected_upper(fnr, n_in, confidence)
    promise = EpsilonDelta(delta).parameter_from_errors(projected_fpr, projected_fnr)
    order = np.argsort(-promise, kind="stable")[:count]
    return tuple(float(value) for value in candidates[order]), float(promise[order[0]]) if order.size else 0.0


def _projected_upper(rate: np.ndarray, size: int, confidence: float) -> np.ndarray:
    """Clopper–Pearson upper bound at ``confidence`` if a fraction ``rate`` of ``size`` trials had failed."""
    errors = np.minimum(rate * size, size - 0.5)
    return np.asarray(stats.beta.ppf(confidence, errors + 1.0, size - errors), dtype=np.float64)


def bound_samples(
    pilot_d: np.ndarray,
    pilot_neighbour: np.ndarray,
    held_out_d: np.ndarray,
    held_out_neighbour: np.ndarray,
    *,
    claim: Claim,
    confidence: float = 0.95,
    thresholds_per_test: int = 3,
    target: np.ndarray | None = None,
    seed: int = 0,
    learned: bool = True,
    classifier: bool = True,
    tests_kept: int | None = None,
) -> SamplesOutcome:
    """Test ``claim`` on samples of the mechanism on D and D' (pilot and held-out, each of shape (size, *output)).

    ``target`` is the record D and D' differ in (its count is a feature of
    table outputs); ``seed`` orders tied scores inside the bound and seeds
    the classifier; ``learned`` adds the learned statistics (:mod:`.learned`),
    ``classifier`` among them the classifier;
    ``tests_kept`` keeps only that many tests, those whose thresholds promise
    the largest bound on the pilot (None: every test).
    """
    half_d, half_n = pilot_d.shape[0] // 2, pilot_neighbour.shape[0] // 2
    table = TableFeatures.fit(np.concatenate([pilot_d[:half_d], pilot_neighbour[:half_n]]), target) if pilot_d.ndim == 3 else None
    fitted = fit_statistics(features(pilot_d[:half_d], table), features(pilot_neighbour[:half_n], table), learned=learned, classifier=classifier, seed=seed)
    delta = claim.delta if claim.delta > 0 else PURE_DELTA
    sizes = (held_out_d.shape[0], held_out_neighbour.shape[0])
    tried_confidence = 1.0 - (1.0 - confidence) / (2 * len(fitted))  # the pilot's projection, as if every test were kept
    plans: list[tuple[int, str, float, tuple[float, ...], float]] = []  # statistic, direction, sign, thresholds, promise
    for index, statistic in enumerate(fitted):
        select = (statistic.score(features(pilot_d[half_d:], table)), statistic.score(features(pilot_neighbour[half_n:], table)))
        for direction, sign in zip(DIRECTIONS, (1.0, -1.0)):
            # in the reverse direction "in" is D' and higher scores still mean D: negate
            inside, outside = (select[0], select[1]) if sign > 0 else (select[1], select[0])
            thresholds, promise = _promising(
                sign * inside, sign * outside, sizes if sign > 0 else sizes[::-1], delta=delta, confidence=tried_confidence, count=thresholds_per_test
            )
            plans.append((index, direction, sign, thresholds, promise))
    tried = tuple((fitted[index].name, direction, promise) for index, direction, _, _, promise in plans)
    if tests_kept is not None:  # chosen on the pilot alone: the held-out family is fixed before the held-out samples are seen
        order = np.argsort([-plan[4] for plan in plans], kind="stable")[:tests_kept]
        plans = [plans[i] for i in sorted(order)]
    per_test = 1.0 - (1.0 - confidence) / len(plans)
    tests: list[SampleTest] = []
    kept: list[tuple[np.ndarray, np.ndarray]] = []
    held: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for index, direction, sign, thresholds, _ in plans:
        if index not in held:
            held[index] = (fitted[index].score(features(held_out_d, table)), fitted[index].score(features(held_out_neighbour, table)))
        scores_d, scores_n = held[index]
        inside, outside = (scores_d, scores_n) if sign > 0 else (scores_n, scores_d)
        bound = epsilon_lower_bound(
            sign * inside,
            sign * outside,
            delta=delta,
            method=claim.method,
            confidence=per_test,
            threshold=Bonferroni(thresholds=thresholds),
            seed=seed,
        )
        tests.append(SampleTest(fitted[index].name, direction, bound))
        kept.append((scores_d, scores_n))
    best = int(np.argmax([test.bound.epsilon for test in tests]))
    return SamplesOutcome(tuple(tests), best, claim, confidence, kept[best][0], kept[best][1], tried)
