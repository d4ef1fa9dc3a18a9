"""The tightest valid one-run bound among methods fixed in advance.

:func:`one_run_lower_bound` runs every requested method on the same scores
and reports the largest ε. Taking the largest of several tests is a multiple
test, so the confidence is split by Bonferroni over *all* the tests the
methods make (one per guess count for the guessing methods, one for the
Gaussian method): each runs at significance (1 - c)/k, and the reported
maximum holds at confidence c.

Methods:

* ``"steinke"``: Steinke, Nasr and Jagielski (2023), valid for any
  (ε, δ)-DP mechanism (:func:`~privaudit.epsilon_one_run_sweep`);
* ``"fdp"``: Mahloujifar, Melis and Chaudhuri (2024), against μ-GDP or a
  subsampled Gaussian (:func:`~privaudit.stats.one_run_fdp.epsilon_one_run_fdp`);
* ``"gaussian"``: the exact t-based bound for summed white-box observations
  (:func:`~privaudit.stats.one_run_gaussian.epsilon_one_run_gaussian`). It
  needs Gaussian observations, so it is never a default: ask for it only
  when the scores are canary-aligned sums of a Gaussian mechanism.

Given a ``null`` family (the claim's own mechanism, :mod:`privaudit.stats.one_run_nulls`),
the order-statistics test of Xiang et al. (:mod:`privaudit.stats.order_statistics`)
replaces these methods: one test, its guess count fixed by the claim.

The one-run game includes each canary with probability ½; the guessing
methods are proved for that inclusion probability only, and other values
are refused for them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._core.results import Result
from .._core.validation import as_scores, check_fraction, check_probability, check_real
from .one_run import _largest_rejected, check_guess_counts, check_members, guess_outcomes
from .one_run_fdp import _check_family, _family_name, fdp_candidates
from .one_run_gaussian import epsilon_one_run_gaussian
from .order_statistics import order_statistics_lower_bound

__all__ = ["METHODS", "OneRunLowerBound", "one_run_lower_bound"]

METHODS = ("steinke", "fdp", "gaussian")
#: The family each winning method tested; "fdp" tests the family it was given.
WINNER_FAMILY = {"steinke": "eps-delta", "gaussian": "gaussian"}
DEFAULT_METHODS = ("steinke", "fdp")


@dataclasses.dataclass(frozen=True)
class OneRunLowerBound(Result):
    """The best of several one-run bounds, each at the Bonferroni-corrected level.

    ``candidates`` holds, per test, (method, guesses made, right guesses, ε);
    the Gaussian method records -1 for both counts. ``method`` names the
    winner and ``kind`` what its number is; ``family`` the privacy family
    the winner tested (:data:`WINNER_FAMILY`: ``"eps-delta"`` for Steinke's
    test, the f-DP family for ``"fdp"``, ``"gaussian"``), and
    ``fdp_family`` the family the "fdp" method was asked to test.

    With a ``null`` (method ``"order-statistics"``): ``refuted`` names the
    null refuted ("not DP-SGD with sigma >= ..., q = ..., T = ..."),
    ``parameter`` is that family parameter (``parameter_name``), and
    ``ceiling`` the bound had every guess been right.
    """

    epsilon: float
    delta: float
    confidence: float
    method: str
    kind: str
    valid: bool
    num_canaries: int
    num_in: int
    num_tests: int
    methods: tuple[str, ...]
    family: str
    inclusion_prob: float
    candidates: tuple[tuple[str, int, int, float], ...]
    fdp_family: str = "gdp"
    refuted: str = ""
    parameter_name: str = ""
    parameter: float | None = None
    ceiling: float | None = None


def _check_methods(methods: Any) -> tuple[str, ...]:
    values = (methods,) if isinstance(methods, str) else tuple(methods)
    if not values or any(not isinstance(value, str) or value not in METHODS for value in values) or len(set(values)) != len(values):
        raise ValueError(f"`methods` must be distinct names among {', '.join(METHODS)}, got {methods!r}")
    return values


def one_run_lower_bound(
    scores: Any,
    is_member: Any,
    *,
    delta: Any,
    confidence: Any = 0.95,
    methods: Any = DEFAULT_METHODS,
    family: Any = "gdp",
    num_guesses: Any = None,
    positive_fraction: Any = None,
    inclusion_prob: Any = 0.5,
    gaussian_noise: bool = True,
    null: Any = None,
    claim: Any = None,
) -> OneRunLowerBound:
    """Tightest valid one-run ε lower bound among ``methods``, Bonferroni-corrected over every test they make.

    Parameters
    ----------
    scores : 1-D array
        One score per canary (higher = more likely included).
    is_member : 1-D array of bool
        Which canaries were included (at least 2 on each side).
    delta : float in (0, 1)
    confidence : float in (0, 1)
    methods : names among "steinke", "fdp", "gaussian"
        Fixed in advance; the default is the guessing methods, which hold for
        any scores.
    family : "gdp" or SubsampledGaussian
        The trade-off family of the "fdp" method.
    num_guesses : sequence of int, optional
        Guess counts of the guessing methods; by default 10 from 10 to m.
    positive_fraction : float in [0, 1], optional
        Share of each guess count spent on "in" guesses: ½ by default, or
        with ``null`` and ``claim`` the share the claim's likelihood ratio
        gives its most confident guesses.
    inclusion_prob : float in (0, 1)
        The probability with which each canary was included; the guessing
        methods need ½.
    gaussian_noise : bool
        For the "gaussian" method: whether its bound is exact (Gaussian
        noise) or asymptotic.
    null : a null family of :mod:`privaudit.stats.one_run_nulls`, optional
        The claim's own family (``GaussianDP(delta)``, ``EpsilonDelta(delta)``,
        ``LaplaceDP(delta)``, ``SubsampledGaussianDP(q, delta)``,
        ``DPSGD(q, T, delta)``). Given, the order-statistics test
        (:func:`~privaudit.stats.order_statistics.order_statistics_lower_bound`)
        replaces ``methods``: far tighter, valid for independent canaries
        (docs/one-run.md). Its δ must be ``delta``.
    claim : float, optional
        With ``null``: the family parameter the claim states (μ, σ or ε); it
        fixes the guess count and the in/out split in advance (one test).
        Without it r/n = 0.1 and 0.5 are tried under Bonferroni.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(10_000) < 0.5
    >>> result = one_run_lower_bound(2.0 * member + rng.normal(size=10_000), member, delta=1e-5)
    >>> result.method, result.num_tests, result.kind
    ('fdp', 20, 'lower bound')
    >>> from privaudit.stats.families import GaussianDP
    >>> tested = one_run_lower_bound(2.0 * member + rng.normal(size=10_000), member, delta=1e-5, null=GaussianDP(1e-5), claim=2.0)
    >>> tested.method, tested.num_tests, tested.epsilon > 2 * result.epsilon, tested.refuted[:22]
    ('order-statistics', 1, True, 'not mu-GDP with mu <= ')
    """
    scores = as_scores(scores, "scores")
    member = check_members(is_member, scores.shape, min_per_side=2)
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    chosen = _check_methods(methods)
    inclusion = check_real(inclusion_prob, "inclusion_prob")
    if not 0.0 < inclusion < 1.0:
        raise ValueError(f"`inclusion_prob` must be in (0, 1), got {inclusion:g}")
    guessing = [name for name in chosen if name != "gaussian"]
    if guessing and inclusion != 0.5:
        raise ValueError(f"`inclusion_prob` must be 0.5 for the guessing methods ({', '.join(guessing)}), got {inclusion:g}")
    if null is not None:
        return _order_statistics(scores, member, null, claim, delta, confidence, chosen, num_guesses, positive_fraction, inclusion)
    checked_family = _check_family(family)
    requested = check_guess_counts(num_guesses, scores.size)
    fraction = check_fraction(0.5 if positive_fraction is None else positive_fraction, "positive_fraction")

    num_tests = len(guessing) * requested.size + ("gaussian" in chosen)
    level = (1.0 - confidence) / num_tests
    made, correct = guess_outcomes(scores, member, requested, fraction)
    candidates: list[tuple[str, int, int, float]] = []
    if "steinke" in chosen:
        log_level = float(np.log(level))
        candidates += [
            ("steinke", int(r), int(v), _largest_rejected(scores.size, int(r), int(v), delta, log_level)) for r, v in zip(made, correct, strict=True)
        ]
    if "fdp" in chosen:
        tests = fdp_candidates(scores.size, made, correct, family=checked_family, delta=delta, level=level)
        candidates += [("fdp", r, v, epsilon) for r, v, _, epsilon in tests]
    kinds = {"steinke": "lower bound", "fdp": "lower bound"}
    if "gaussian" in chosen:
        gaussian = epsilon_one_run_gaussian(scores, member, delta=delta, confidence=1.0 - level, gaussian_noise=gaussian_noise)
        candidates.append(("gaussian", -1, -1, gaussian.epsilon))
        kinds["gaussian"] = gaussian.kind
    best = max(candidates, key=lambda item: item[3])
    # the winner's kind is the result's (an asymptotic winner makes it approximate); ties go to the first listed
    return OneRunLowerBound(
        epsilon=best[3],
        delta=delta,
        confidence=confidence,
        method=best[0],
        kind=kinds[best[0]],
        valid=True,
        num_canaries=scores.size,
        num_in=int(member.sum()),
        num_tests=num_tests,
        methods=chosen,
        family=WINNER_FAMILY.get(best[0], _family_name(checked_family)),
        fdp_family=_family_name(checked_family),
        inclusion_prob=inclusion,
        candidates=tuple(candidates),
    )


def _order_statistics(
    scores: np.ndarray,
    member: np.ndarray,
    null: Any,
    claim: Any,
    delta: float,
    confidence: float,
    chosen: tuple[str, ...],
    num_guesses: Any,
    fraction: Any,
    inclusion: float,
) -> OneRunLowerBound:
    """The order-statistics test against ``null`` (the ``null`` branch of :func:`one_run_lower_bound`)."""
    if chosen != DEFAULT_METHODS:
        raise ValueError(f"`methods` cannot be combined with `null`: the order-statistics test replaces them, got {chosen!r}")
    if inclusion != 0.5:
        raise ValueError(f"`inclusion_prob` must be 0.5 for the order-statistics test, got {inclusion:g}")
    if not hasattr(null, "knots"):
        raise ValueError(f"`null` must be a one-run null family (privaudit.stats.one_run_nulls), got {null!r}")
    if float(null.delta) != delta:
        raise ValueError(f"`null` has delta {null.delta:g}, not `delta` {delta:g}: build the null at the bound's delta")
    found = order_statistics_lower_bound(scores, member, null=null, claim=claim, confidence=confidence, num_guesses=num_guesses, positive_fraction=fraction)
    return OneRunLowerBound(
        epsilon=found.epsilon,
        delta=delta,
        confidence=confidence,
        method="order-statistics",
        kind=found.kind,
        valid=True,
        num_canaries=scores.size,
        num_in=int(member.sum()),
        num_tests=found.num_tests,
        methods=("order-statistics",),
        family=null.name,
        inclusion_prob=inclusion,
        candidates=(("order-statistics", found.num_guesses, found.num_correct, found.epsilon),),
        fdp_family=null.name,
        refuted=found.null,
        parameter_name=found.parameter_name,
        parameter=found.parameter,
        ceiling=found.ceiling,
    )
