"""The ceiling of a lower bound: the largest value its design could have shown.

A lower bound from m canaries, or from n observations per side, at
confidence c with k Bonferroni tests cannot exceed the bound a *perfect*
attack gets on the same design: every member scored above every
non-member (each guess right that the guess rule can make right), every
error count zero.
That value is the ceiling. A bound close to its ceiling says "ε is at least
this, and may be much more": the design, not the model, limited it, and only
more canaries, samples or trials raise it.

>>> from privaudit.stats.one_run import epsilon_one_run
>>> ceiling = one_run_ceiling(1000, delta=0.0, methods=("steinke",), num_guesses=[100])
>>> ceiling == epsilon_one_run(1000, 100, 100, delta=0.0).epsilon
True
>>> at_ceiling(3.2, ceiling), at_ceiling(2.0, ceiling)
(True, False)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._core.validation import check_count, check_fraction, check_probability
from .bounds import METHODS as _BOUND_METHODS
from .bounds import _check_interval, _evaluate, _resolve_family
from .one_run import _check_delta, _largest_rejected, check_guess_counts
from .one_run_combined import METHODS as _ONE_RUN_METHODS
from .one_run_fdp import _check_family, fdp_candidates
from .verdict import TOLERANCE, at_ceiling, ceiling_note

__all__ = [
    "TOLERANCE",
    "Ceiling",
    "at_ceiling",
    "make_ceiling",
    "ceiling_note",
    "ceiling_of",
    "exposure_ceiling",
    "lower_bound_ceiling",
    "one_run_ceiling",
    "one_run_record_ceiling",
]


@dataclasses.dataclass(frozen=True)
class Ceiling:
    """A bound's ceiling, as results record it.

    ``value`` is the bound a perfect attack would get on the same design
    (``design`` says which: canaries, samples per side, confidence,
    Bonferroni count); ``at_ceiling`` whether ``bound`` is within 10% of it;
    ``raise_with`` what would raise the ceiling ("more canaries").
    """

    value: float
    bound: float
    at_ceiling: bool
    raise_with: str
    design: str = ""

    @property
    def note(self) -> str | None:
        """The sentence the report and the console print when the bound is at its ceiling."""
        return ceiling_note(self.bound, self.value, raise_with=self.raise_with)


def make_ceiling(bound: float, value: float | None, *, raise_with: str, design: str = "") -> Ceiling | None:
    """The :class:`Ceiling` of ``bound`` (None when the design has none to report).

    >>> make_ceiling(2.5, 2.6, raise_with="more canaries").at_ceiling
    True
    """
    if value is None:
        return None
    return Ceiling(value=float(value), bound=float(bound), at_ceiling=at_ceiling(bound, value), raise_with=raise_with, design=design)


def one_run_ceiling(
    num_canaries: Any,
    *,
    num_in: Any = None,
    delta: Any,
    confidence: Any = 0.95,
    methods: Any = ("steinke", "fdp"),
    family: Any = "gdp",
    num_guesses: Any = None,
    positive_fraction: Any = 0.5,
) -> float:
    """The one-run bound of a perfect attack (every member scored above every non-member) on the design, for each guess count.

    The design is that of :func:`~privaudit.stats.one_run_combined.one_run_lower_bound`:
    m canaries of which ``num_in`` were included, the guess counts (10 from
    10 to m by default), one test per guessing method and count, Bonferroni
    over them all. For each count r the attack guesses "in" on its
    k = round(r × ``positive_fraction``) highest scores and "out" on the
    r - k lowest, so with n members it is right min(k, n) + min(r - k, m - n)
    times: a guess count larger than a side makes errors even for a perfect
    attack. Without ``num_in`` every guess is counted right, the largest
    ceiling over the coins' draws (the design's before they are drawn). The
    Gaussian method has no ceiling (a perfect separation makes its t
    statistic unbounded): with it the ceiling is inf.

    >>> round(one_run_ceiling(170, delta=1e-5, methods=("steinke",)), 3)
    3.437
    >>> round(one_run_ceiling(170, num_in=20, delta=1e-5, methods=("steinke",)), 3)  # 20 members cap the "in" guesses
    1.793
    """
    m = check_count(num_canaries, "num_canaries", minimum=1)
    members = None if num_in is None else check_count(num_in, "num_in", maximum=m)
    delta = _check_delta(delta)
    confidence = check_probability(confidence, "confidence")
    fraction = check_fraction(positive_fraction, "positive_fraction")
    chosen = (methods,) if isinstance(methods, str) else tuple(methods)
    if not chosen or any(name not in _ONE_RUN_METHODS for name in chosen):
        raise ValueError(f"`methods` must be names among {', '.join(_ONE_RUN_METHODS)}, got {methods!r}")
    if "gaussian" in chosen:
        return math.inf
    requested = check_guess_counts(num_guesses, m)
    if members is None:
        correct = requested
    else:
        # the guess rule of privaudit.stats.one_run.guess_outcomes, on scores with no ties
        positive = np.array([int(round(r * fraction)) for r in requested], dtype=np.int64)
        correct = np.minimum(positive, members) + np.minimum(requested - positive, m - members)
    level = (1.0 - confidence) / (len(chosen) * requested.size)
    best = 0.0
    if "steinke" in chosen:
        best = max(best, *(_largest_rejected(m, int(r), int(v), delta, float(np.log(level))) for r, v in zip(requested, correct, strict=True)))
    if "fdp" in chosen:
        if delta == 0.0:
            raise ValueError("`delta` must be in (0, 1) for the fdp method, got 0")
        tests = fdp_candidates(m, requested, correct, family=_check_family(family), delta=delta, level=level)
        best = max(best, *(epsilon for *_, epsilon in tests))
    return float(best)


def one_run_record_ceiling(
    num_canaries: Any, *, num_in: Any = None, copies: Any, delta: Any, confidence: Any = 0.95, methods: Any = ("steinke",), num_guesses: Any = None
) -> float:
    """The ceiling of :func:`~privaudit.stats.one_run_group.per_record_one_run_lower_bound`: its two group tests on a perfect attack's scores.

    ``num_in`` as in :func:`one_run_ceiling`.

    >>> one_run_record_ceiling(500, copies=1, delta=1e-5) == one_run_ceiling(500, delta=1e-5, methods=("steinke",))
    True
    """
    from .one_run_group import group_delta

    copies = check_count(copies, "copies", minimum=1)

    def ceiling_at(at: float) -> float:
        return one_run_ceiling(num_canaries, num_in=num_in, delta=at, confidence=confidence, methods=methods, num_guesses=num_guesses)

    if copies == 1:
        return ceiling_at(delta)
    upper = ceiling_at(group_delta(delta, 0.0, copies))
    step = group_delta(delta, upper / copies, copies) if math.isfinite(upper) else 1.0
    if step >= 1.0:
        return 0.0
    return float(ceiling_at(step) / copies)


def exposure_ceiling(num_canaries: Any, num_references: Any, *, quantile: Any = 0.5, confidence: Any = 0.95, duplicates: Any = 1) -> float:
    """The ceiling of :func:`~privaudit.stats.exposure.epsilon_from_exposure`: every canary's loss below every reference's.

    Then the k = ceil(q m) canaries at or below the threshold give the TPR's
    Clopper–Pearson lower bound from k of m, and no reference does: the
    FPR's upper bound from 0 of n; ε = ln(TPR_lo / FPR_up) / duplicates.

    >>> round(exposure_ceiling(10, 10_000), 3)
    6.229
    """
    from .intervals import _lower, _upper

    m = check_count(num_canaries, "num_canaries", minimum=1)
    n = check_count(num_references, "num_references", minimum=1)
    confidence = check_probability(confidence, "confidence")
    copies = check_count(duplicates, "duplicates", minimum=1)
    k = max(1, math.ceil(float(quantile) * m))
    level = 1.0 - (1.0 - confidence) / 2.0
    tpr_lower = float(_lower(np.int64(k), np.int64(m), level, "clopper-pearson"))
    fpr_upper = float(_upper(np.int64(0), np.int64(n), level, "clopper-pearson"))
    return max(0.0, math.log(tpr_lower) - math.log(fpr_upper)) / copies


def lower_bound_ceiling(
    num_in: Any, num_out: Any, *, delta: Any, confidence: Any = 0.95, num_tests: Any = 1, method: Any = "gdp", interval: Any = "clopper-pearson"
) -> float:
    """The bound of :func:`~privaudit.stats.bounds.epsilon_lower_bound` with no false positive and no false negative.

    ``num_in``/``num_out`` are the observations the bound is evaluated on
    (after any held-out split), ``num_tests`` the Bonferroni count, so each
    test runs at confidence 1 - (1 - c)/k, as the bound itself does.

    With no error at all, Clopper–Pearson gives ᾱ = β̄ = 1 - 0.025^(1/n)
    (each at one-sided level 0.975) and the pure bound is log((1 - ᾱ)/β̄):

    >>> bar = 1 - 0.025 ** (1 / 1000)
    >>> round(lower_bound_ceiling(1000, 1000, delta=0.0, method="pure"), 6) == round(math.log((1 - bar) / bar), 6)
    True
    """
    n_in = check_count(num_in, "num_in", minimum=1)
    n_out = check_count(num_out, "num_out", minimum=1)
    confidence = check_probability(confidence, "confidence")
    tests = check_count(num_tests, "num_tests", minimum=1)
    family = _resolve_family(method, float(delta))
    interval = _check_interval(interval, family)
    epsilon, _, _ = _evaluate(family, interval, 0, n_out, 0, n_in, 1.0 - (1.0 - confidence) / tests)
    return float(epsilon)


def ceiling_of(result: Any, *, method: Any = None, num_guesses: Any = None) -> float | None:
    """The ceiling of a bound result of the statistical core, from the design it records.

    Handles :class:`~privaudit.stats.gaussian_steps.GaussianStepBound`, :class:`~privaudit.stats.bounds.EpsilonLowerBound` (``method``
    must be passed for a PLD family, whose object the result names only),
    :class:`~privaudit.stats.one_run_combined.OneRunLowerBound` (for the
    order-statistics test, the ceiling it recorded) and the one-run sweeps (``num_guesses``: the guess counts the design asked for,
    None for the default). Returns None for anything else.
    """
    name = type(result).__name__
    if name == "EpsilonLowerBound":
        chosen = method if method is not None else result.method
        if isinstance(chosen, str) and chosen not in _BOUND_METHODS:
            return None  # a PLD family by name only: the caller must pass the family
        if result.threshold_strategy.startswith("MultiSplit"):
            # the lower median of splits, each a single held-out test at confidence 1 - (1 - c)/2
            return lower_bound_ceiling(
                result.num_in, result.num_out, delta=result.delta, confidence=1.0 - (1.0 - result.confidence) / 2.0, method=chosen, interval=result.interval
            )
        return lower_bound_ceiling(
            result.num_in, result.num_out, delta=result.delta, confidence=result.confidence, num_tests=result.num_tests, method=chosen, interval=result.interval
        )
    if name == "GaussianStepBound":  # recorded with the bound; the t test has none (inf)
        return float(result.ceiling) if np.isfinite(result.ceiling) else None
    family = method if method is not None else "gdp"
    if name == "OneRunLowerBound" and result.method == "order-statistics":
        return None if result.ceiling is None else float(result.ceiling)  # computed with the bound, by the same test, on the guess count it used
    if name == "OneRunLowerBound":  # its candidates record the guesses made, which ties can cut below the design's
        if method is None and "fdp" in result.methods and getattr(result, "fdp_family", "gdp") != "gdp":
            return None  # a PLD family by name only: the caller must pass the family
        return one_run_ceiling(
            result.num_canaries,
            num_in=result.num_in,
            delta=result.delta,
            confidence=result.confidence,
            methods=result.methods,
            family=family,
            num_guesses=num_guesses,
        )
    if name in ("OneRunSweep", "OneRunFDPBound"):  # they record no member count: every guess counted right
        requested = [int(wanted) for wanted, *_ in result.candidates]
        methods = ("fdp",) if name == "OneRunFDPBound" else ("steinke",)
        return one_run_ceiling(result.num_canaries, delta=result.delta, confidence=result.confidence, methods=methods, family=family, num_guesses=requested)
    return None
