"""One-run ε lower bounds against f-DP (Mahloujifar, Melis and Chaudhuri 2024).

The game is the one of :mod:`privaudit.stats.one_run`: m canaries, each
included independently with probability ½, one training run, and an auditor
that guesses "in" or "out" for r canaries and is right v times. Steinke et
al. compare v with a binomial tail, which only uses the (ε, δ) curve of the
mechanism. Mahloujifar et al. bound the tail with the mechanism's whole
trade-off function f: if training is f-DP, the chance of v or more right
guesses among r is limited by a recursion over v, and observing v right
guesses with probability at least τ is impossible when the recursion ends
above r/m. We run their recursion ("audit_rh" with its cap at 1) as stated:
with ρ = τv/m and η = τ(r - v)/m, for i = v - 1 down to 0,

    η' = max(η, f(1 - ρ)),   ρ' = min(ρ + i/(r - i) · (η' - η), 1),

and f is rejected at significance τ when ρ + η > r/m at the end. Both
quantities only grow, so the loop stops as soon as the rejection is certain,
or when η stops changing.

Families of f, each with a parameter searched by bisection:

* ``"gdp"``: f = G_μ, f(1 - ρ) = Φ(Φ⁻¹(ρ) - μ), evaluated as
  exp(log Φ(·)) so that no tail underflows to a wrong value; the bound is
  the largest μ rejected, reported as ε(δ) of μ-GDP;
* a :class:`~privaudit.stats.pld.SubsampledGaussian`: the supporting lines
  of the pessimistic PLD (a curve below the true one); the bound is the
  least noise multiplier σ rejected, reported as ε(δ) of that σ from the
  optimistic PLD. Each σ costs a composed PLD, so the search runs twice:
  every guess count on the lines of a coarse PLD (grid step 10⁻², σ to 1%,
  ε on a 10⁻³ grid), then the counts within 3% of the least σ again on a
  fine one (10⁻³, σ to 0.1%, ε on the finest grid that fits from 10⁻⁴), as
  before. Only the headline needs the fine search; the other candidates keep
  their coarse, smaller ε.

Conservative choices, each making the reported ε smaller:

* a rejection needs ρ + η to exceed r/m by a relative 10⁻⁹ (float slack);
* bisection returns the end of its bracket that is rejected: the smaller μ,
  the larger σ;
* every PLD approximation errs the safe way: the lines come from a
  pessimistic PLD (δ(ε) too large, so the curve too low and rejection
  harder, on the coarse grid as on the fine one), ε from an
  optimistic one (losses rounded down; a coarser grid only lowers ε more),
  rounded down by a relative 10⁻⁹;
* guesses are made by thresholds that never split tied scores, and the
  guess counts, fixed in advance, are Bonferroni-corrected.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

from .._core.validation import as_scores, check_fraction, check_probability
from .conversions import gdp_epsilon
from .one_run import OneRunSweep, check_guess_counts, check_members, guess_outcomes
from .pld import SubsampledGaussian, _supporting_lines, lower_envelope

__all__ = ["OneRunFDPBound", "epsilon_one_run_fdp", "fdp_candidates", "fdp_rejects"]

_MU_RANGE = (0.0, 64.0)
_MU_TOLERANCE = 1e-5
_SIGMA_TOLERANCE = 1e-3
_SIGMA_CEILING = 1024.0
_SLACK = 1e-9
#: Every test is searched first on the supporting lines of coarse pessimistic PLDs (grid step 1e-2)
#: to 1% in σ; the tests within 3% of the least σ found are searched again on fine lines (1e-3) to
#: 0.1%, from a bracket 2% below their coarse σ.
_COARSE_LINES, _FINE_LINES = 1e-2, 1e-3
_COARSE_TOLERANCE, _REFINE_WITHIN, _GUESS_MARGIN = 1e-2, 0.03, 0.02


def fdp_rejects(tradeoff_complement: Callable[[float], float], num_canaries: int, num_guesses: int, num_correct: int, level: float) -> bool:
    """Whether ``num_correct`` right guesses of ``num_guesses`` rule out f-DP at significance ``level``.

    ``tradeoff_complement(x)`` is f(1 - x). Under perfect privacy (f(α) = 1 - α)
    the right guesses are Binomial(r, ½), and 15 of 20 (tail 0.021) are
    rejected at 5% while 14 of 20 (tail 0.058) are not, as the exact test says:

    >>> fdp_rejects(lambda x: x, 1000, 20, 15, 0.05), fdp_rejects(lambda x: x, 1000, 20, 14, 0.05)
    (True, False)
    """
    m, r, v = num_canaries, num_guesses, num_correct
    limit = r / m * (1.0 + _SLACK)
    right, wrong = level * v / m, level * (r - v) / m
    for i in range(v - 1, -1, -1):
        if right + wrong > limit:
            return True
        new_wrong = max(wrong, tradeoff_complement(right))
        if new_wrong == wrong:
            break
        right = min(right + i / (r - i) * (new_wrong - wrong), 1.0)
        wrong = new_wrong
    return right + wrong > limit


def _gdp_complement(mu: float) -> Callable[[float], float]:
    def complement(x: float) -> float:
        return math.exp(float(special.log_ndtr(special.ndtri(x) - mu)))

    return complement


def _largest_rejected_mu(m: int, r: int, v: int, level: float) -> float:
    low, high = _MU_RANGE
    if r == 0 or not fdp_rejects(_gdp_complement(low), m, r, v, level):
        return 0.0
    if fdp_rejects(_gdp_complement(high), m, r, v, level):
        return high
    while high - low > _MU_TOLERANCE:
        middle = 0.5 * (low + high)
        low, high = (middle, high) if fdp_rejects(_gdp_complement(middle), m, r, v, level) else (low, middle)
    return low


def _pld_complement(mechanism: SubsampledGaussian, sigma: float, discretization: float) -> Callable[[float], float]:
    lines = _supporting_lines(mechanism, sigma, discretization)

    def complement(x: float) -> float:
        return float(lower_envelope(lines, np.array(1.0 - x))[()])

    return complement


def _least_rejected(rejected: Callable[[float], bool], low: float, high: float, tolerance: float) -> float:
    """Bisect in log scale between ``low`` (not rejected) and ``high`` (rejected); return the rejected end."""
    while high / low > 1.0 + tolerance:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if rejected(middle) else (middle, high)
    return high


def _smallest_rejected_sigma(
    mechanism: SubsampledGaussian, m: int, r: int, v: int, level: float, discretization: float, tolerance: float, guess: float = math.inf
) -> float:
    """Least σ whose lines (at ``discretization``) the test rejects, to a relative ``tolerance``; a ``guess`` a little above it saves most of the steps."""

    def rejected(sigma: float) -> bool:
        return fdp_rejects(_pld_complement(mechanism, sigma, discretization), m, r, v, level)

    floor = mechanism.smallest_noise()
    if r == 0:
        return math.inf
    below = guess / (1.0 + _GUESS_MARGIN)
    if math.isfinite(guess) and below > floor and rejected(guess) and not rejected(below):
        return _least_rejected(rejected, below, guess, tolerance)
    if not rejected(_SIGMA_CEILING):
        return math.inf
    if rejected(floor):
        return floor
    return _least_rejected(rejected, floor, _SIGMA_CEILING, tolerance)


def _pld_candidates(mechanism: SubsampledGaussian, m: int, made: list[int], correct: list[int], delta: float, level: float) -> list[tuple[float, float]]:
    """(σ bound, ε) per test: every test on coarse lines, the tests that may be the best again on fine ones."""
    family = mechanism.family_for(delta)
    coarse = [_smallest_rejected_sigma(mechanism, m, r, v, level, _COARSE_LINES, _COARSE_TOLERANCE) for r, v in zip(made, correct, strict=True)]
    least = min(coarse)
    results = []
    for r, v, sigma in zip(made, correct, coarse, strict=True):
        if math.isfinite(sigma) and sigma <= least * (1.0 + _REFINE_WITHIN):
            sigma = _smallest_rejected_sigma(mechanism, m, r, v, level, _FINE_LINES, _SIGMA_TOLERANCE, guess=sigma)
            results.append((sigma, family.epsilon(sigma)))
        else:
            results.append((sigma, family.epsilon(sigma, finest=_FINE_LINES)))
    return results


def _family_name(family: Any) -> str:
    if isinstance(family, SubsampledGaussian):
        return f"pld(sampling_prob={family.sampling_prob:g}, num_steps={family.num_steps})"
    return "gdp"


def _check_family(family: Any) -> Any:
    if isinstance(family, SubsampledGaussian):
        if family.sampling_prob == 1.0:  # exactly (√T/σ)-GDP: the closed form is exact and fast
            return "gdp"
        return family
    if family == "gdp":
        return family
    raise ValueError(f"`family` must be 'gdp' or a SubsampledGaussian, got {family!r}")


def fdp_candidates(m: int, made: np.ndarray, correct: np.ndarray, *, family: Any, delta: float, level: float) -> list[tuple[int, int, float, float]]:
    """(guesses, right guesses, parameter bound, ε) per guess count, each tested at significance ``level``."""
    if isinstance(family, SubsampledGaussian):
        bounds = _pld_candidates(family, m, made.tolist(), correct.tolist(), delta, level)
        return [(r, v, sigma, epsilon) for r, v, (sigma, epsilon) in zip(made.tolist(), correct.tolist(), bounds, strict=True)]
    results = []
    for r, v in zip(made.tolist(), correct.tolist(), strict=True):
        mu = _largest_rejected_mu(m, r, v, level)
        results.append((r, v, mu, float(gdp_epsilon(mu, delta)) if mu > 0 else 0.0))
    return results


@dataclasses.dataclass(frozen=True)
class OneRunFDPBound(OneRunSweep):
    """One-run lower bound against an f-DP family; ``parameter`` bounds μ (GDP) from below or σ (PLD) from above.

    ``candidates`` holds (requested guesses, guesses made, right guesses, ε)
    per test, as in :class:`~privaudit.stats.one_run.OneRunSweep`.
    """

    family: str = "gdp"
    parameter_name: str = "mu"
    parameter: float = 0.0


def epsilon_one_run_fdp(
    scores: Any, is_member: Any, *, delta: Any, confidence: Any = 0.95, family: Any = "gdp", num_guesses: Any = None, positive_fraction: Any = 0.5
) -> OneRunFDPBound:
    """One-run ε lower bound against f-DP (Mahloujifar et al. 2024), swept over guess counts with Bonferroni.

    Guesses are made as in :func:`~privaudit.epsilon_one_run_sweep`: for each
    count r, "in" for the round(r × ``positive_fraction``) highest scores and
    "out" for the rest of the r lowest. Each of the k counts is tested at
    significance (1 - c)/k, so the best stays valid at confidence c.

    Parameters
    ----------
    scores : 1-D array
        Membership scores of the m canaries (higher = more likely in).
    is_member : 1-D array of bool
        Which canaries were included, each independently with probability ½.
    delta : float in (0, 1)
        The δ at which the bound is reported.
    confidence : float in (0, 1)
    family : "gdp" or SubsampledGaussian
        The trade-off functions tested: μ-GDP, or DP-SGD's subsampled,
        composed Gaussian mechanism with noise multiplier σ.
    num_guesses : sequence of int in [1, m], optional
        Guess counts fixed in advance; by default 10 sizes from 10 to m.
    positive_fraction : float in [0, 1]

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(1000) < 0.5
    >>> result = epsilon_one_run_fdp(2.0 * member + rng.normal(size=1000), member, delta=1e-5)
    >>> result.family, result.num_tests, bool(0 < result.epsilon < float(gdp_epsilon(2.0, 1e-5)))
    ('gdp', 10, True)
    """
    scores = as_scores(scores, "scores")
    member = check_members(is_member, scores.shape)
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    family = _check_family(family)
    requested = check_guess_counts(num_guesses, scores.size)
    fraction = check_fraction(positive_fraction, "positive_fraction")
    made, correct = guess_outcomes(scores, member, requested, fraction)
    tests = fdp_candidates(scores.size, made, correct, family=family, delta=delta, level=(1.0 - confidence) / requested.size)
    best = max(range(len(tests)), key=lambda index: tests[index][3])
    return OneRunFDPBound(
        epsilon=tests[best][3],
        delta=delta,
        confidence=confidence,
        num_canaries=scores.size,
        num_guesses=tests[best][0],
        num_correct=tests[best][1],
        num_tests=requested.size,
        candidates=tuple((int(w), r, v, e) for w, (r, v, _, e) in zip(requested, tests, strict=True)),
        positive_fraction=fraction,
        family=_family_name(family),
        parameter_name="noise_multiplier" if isinstance(family, SubsampledGaussian) else "mu",
        parameter=tests[best][2],
    )
