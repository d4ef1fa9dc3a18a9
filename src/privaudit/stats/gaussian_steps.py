"""The null of a white-box DP-SGD audit with canaries in every step: one Gaussian step of noise σ, tested per observation.

Gradient canaries on audit coordinates of their own (Opacus' auditors:
:mod:`privaudit.integrations.opacus_inloop`, :func:`~privaudit.integrations.opacus.audit_opacus`)
give, at each step and slot, an observation N(1, σ²) where a canary was
inserted and N(0, σ²) where none was (released · B / C). DP-SGD's noise is
isotropic and each canary is deterministic in its step, so, given which
slots were chosen, the observations are independent; under "DP-SGD with
noise σ" each is a draw of one Gaussian step, (1/σ)-GDP. Two tests of that
null, both refuting "a Gaussian step with σ >= σ_r":

* ``"gaussian"`` (the default): the two-sample t statistic of the canary
  against the other observations, inverted through its noncentral t law
  (:func:`~privaudit.stats.one_run_gaussian.epsilon_one_run_gaussian`).
  Exact for Gaussian observations given the slots, whatever their split (1
  canary in 10 slots here) and whatever σ and the offset are, and it uses
  every observation;
* ``"order-statistics"``: Xiang et al.'s test (:mod:`privaudit.stats.order_statistics`)
  needs a fair coin per canary, which the slots are not (k canaries among
  10k). Each canary observation is paired with its own other observation
  (the first ones, an order fixed by the slots, not by the values) and a
  seeded fair coin orients the difference: the score d = ±(o_in - o_out) is
  N(+1, 2σ²) when the coin says "in", N(-1, 2σ²) otherwise, independently,
  so it is exactly a draw of (√2/σ)-GDP with a fair coin: the proven case
  of the test, against ``GaussianDP`` at the claim's μ_pair = √2/σ_claim.
  The other 8 of every 9 "out" observations are not used.

On Opacus' digits loop (ε = 4) the t test's bound is the larger (docs/guide-own-model.md).

The hidden state (:func:`final_sum_step_bound`): a canary in every one of T
steps, each with its own audit coordinate and a fair coin, and only each
coordinate's sum over the steps read (the final model of plain SGD along
it). Under "T Gaussian steps of noise σ_t >= σ" the sum is N(T, Σσ_t²) for
an included canary and N(0, Σσ_t²) otherwise: one Gaussian step of
μ_T <= √T/σ, the composition of the T steps (hiding the iterates gives
nothing here; Cebere, Bellet and Papernot 2025). Either test above refutes
μ_T on the sums; the per-step μ is μ_T/√T.

>>> rng = np.random.default_rng(0)
>>> found = gaussian_step_bound(rng.normal(1.0, 0.8, 2_000), rng.normal(0.0, 0.8, 18_000), delta=1e-5)
>>> found.method, bool(0.9 * 1.25 < found.parameter < 1.25), found.null[:34]
('gaussian', True, 'not a Gaussian step with sigma >= ')
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._core.results import Result
from .._core.seeding import check_seed
from .._core.validation import as_scores, check_count, check_positive, check_probability
from .conversions import gdp_epsilon
from .families import GaussianDP
from .one_run_gaussian import epsilon_one_run_gaussian
from .order_statistics import order_statistics_lower_bound

__all__ = ["STEP_TESTS", "GaussianStepBound", "final_sum_step_bound", "gaussian_step_bound"]

#: The per-step tests, the default first.
STEP_TESTS = ("gaussian", "order-statistics")


@dataclasses.dataclass(frozen=True)
class GaussianStepBound(Result):
    """A per-step lower bound μ ≥ ``parameter`` on a Gaussian step (σ ≤ ``sigma``), and ε(δ) of that μ-GDP step, rounded down.

    ``null`` names what was refuted ("not a Gaussian step with sigma >= …");
    ``ceiling`` is the largest per-step ε the design could show (inf for the
    t test: its statistic grows without bound with the separation); ``claim``
    the per-step μ the order-statistics test was designed for (None for the
    t test, which needs none). ``num_guesses`` and ``num_correct`` are the
    order-statistics test's released guesses (None for the t test).
    """

    epsilon: float
    delta: float
    confidence: float
    parameter: float  # μ per step, 0.0 when nothing was refuted
    sigma: float | None  # 1/μ: every σ at least this is refuted
    null: str
    method: str
    num_in: int
    num_out: int
    ceiling: float
    claim: float | None = None
    num_guesses: int | None = None
    num_correct: int | None = None
    seed: int | None = None
    kind: str = "lower bound"
    valid: bool = True


def _refuted(mu: float) -> tuple[float | None, str]:
    if mu <= 0.0:
        return None, "nothing refuted"
    return 1.0 / mu, f"not a Gaussian step with sigma >= {1.0 / mu:.4g} (sensitivity 1)"


def _paired(in_obs: np.ndarray, out_obs: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, coins): each canary observation minus its own other observation, the sign set by a seeded fair coin."""
    if out_obs.size < in_obs.size:
        raise ValueError(f"the order-statistics test pairs each canary observation with another: {in_obs.size} canary, only {out_obs.size} other")
    coins = np.random.default_rng([seed, 45]).random(in_obs.size) < 0.5
    difference = in_obs - out_obs[: in_obs.size]
    return np.where(coins, difference, -difference), coins


def _order_statistics(scores: np.ndarray, coins: np.ndarray, *, delta: float, claim: float, confidence: float, seed: int) -> Any:
    """Xiang et al.'s test against ``GaussianDP`` at ``claim``, ties broken by :func:`_untied`; all tied: nothing refuted, the design's ceiling kept."""
    null = GaussianDP(delta)
    if np.ptp(scores) == 0.0:  # every score tied (the canary moved nothing): no guess can be made, nothing is refuted
        separated = np.where(coins, 1.0, -1.0) * (1.0 + np.arange(coins.size) / coins.size)  # all guesses right: the design's ceiling
        perfect = order_statistics_lower_bound(separated, coins, null=null, claim=claim, confidence=confidence)
        return dataclasses.replace(perfect, epsilon=0.0, parameter=None, num_guesses=0, num_correct=0)
    return order_statistics_lower_bound(_untied(scores, seed), coins, null=null, claim=claim, confidence=confidence)


def _untied(scores: np.ndarray, seed: int) -> np.ndarray:
    """``scores`` as distinct ranks when some tie, each tie broken by a seeded draw independent of the coins; unchanged otherwise.

    The test guesses from the order alone and makes no guess inside a tie;
    a tie-break that does not depend on the coins keeps it valid and lets
    tied scores (a deterministic training gives every run the same loss)
    still be guessed.

    >>> _untied(np.array([0.5, -1.0, 2.0]), 0).tolist(), sorted(_untied(np.array([1.0, 1.0, -1.0]), 0).tolist())
    ([0.5, -1.0, 2.0], [0.0, 1.0, 2.0])
    """
    if np.unique(scores).size == scores.size:
        return scores
    order = np.lexsort((np.random.default_rng([seed, 46]).random(scores.size), scores))
    ranks = np.empty(scores.size)
    ranks[order] = np.arange(scores.size)
    return ranks


def gaussian_step_bound(
    in_observations: Any,
    out_observations: Any,
    *,
    delta: Any,
    confidence: Any = 0.95,
    test: str = "gaussian",
    claim: Any = None,
    seed: Any = 0,
) -> GaussianStepBound:
    """Lower-bound the per-step μ = 1/σ of a Gaussian step from canary (N(1, σ²)) and other (N(0, σ²)) observations.

    ``test``: ``"gaussian"`` (the t test, default) or ``"order-statistics"``
    (paired scores, fair coins from ``seed``, designed for ``claim``, the
    per-step μ = 1/σ the claim states: required there).
    """
    inside = as_scores(in_observations, "in_observations")
    outside = as_scores(out_observations, "out_observations")
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    if test not in STEP_TESTS:
        raise ValueError(f"`test` must be one of {', '.join(STEP_TESTS)}, got {test!r}")
    if test == "gaussian":
        found = epsilon_one_run_gaussian(
            np.concatenate([inside, outside]), np.r_[np.ones(inside.size, bool), np.zeros(outside.size, bool)], delta=delta, confidence=confidence
        )
        sigma, null = _refuted(found.mu)
        return GaussianStepBound(
            epsilon=found.epsilon,
            delta=delta,
            confidence=confidence,
            parameter=found.mu,
            sigma=sigma,
            null=null,
            method="gaussian",
            num_in=inside.size,
            num_out=outside.size,
            ceiling=math.inf,
            kind=found.kind,
        )
    if claim is None:
        raise ValueError("`claim` (the per-step μ = 1/σ the claim states) is needed by the order-statistics test: it fixes the guess count")
    mu_claim = check_positive(claim, "claim")
    seed = check_seed(seed)
    scores, coins = _paired(inside, outside, seed)
    found_os = _order_statistics(scores, coins, delta=delta, claim=math.sqrt(2.0) * mu_claim, confidence=confidence, seed=seed)
    mu = 0.0 if found_os.parameter is None else float(found_os.parameter) / math.sqrt(2.0)  # μ_pair = √2 μ: exact for the Gaussian step
    return _step_result(
        mu,
        delta=delta,
        confidence=confidence,
        method="order-statistics",
        num_in=inside.size,
        num_out=outside.size,
        ceiling_mu=_ceiling_mu(found_os, delta),
        claim=mu_claim,
        num_guesses=found_os.num_guesses,
        num_correct=found_os.num_correct,
        seed=seed,
    )


def _step_result(mu: float, *, delta: float, confidence: float, ceiling_mu: float, **fields: Any) -> GaussianStepBound:
    """The per-step result of a refuted μ (0: nothing refuted): its σ, the null named, ε(δ) and the ceiling's ε (inf for none), rounded down."""
    sigma, null = _refuted(mu)
    ceiling = math.inf if math.isinf(ceiling_mu) else float(gdp_epsilon(ceiling_mu, delta)) if ceiling_mu > 0.0 else 0.0
    epsilon = float(gdp_epsilon(mu, delta)) if mu > 0.0 else 0.0
    return GaussianStepBound(epsilon=epsilon, delta=delta, confidence=confidence, parameter=mu, sigma=sigma, null=null, ceiling=ceiling, **fields)


def _ceiling_mu(found: Any, delta: float) -> float:
    """The per-step μ of the order-statistics ceiling: the pair's μ-GDP whose ε is the ceiling, over √2."""
    return _composed_ceiling_mu(found, delta) / math.sqrt(2.0)


def final_sum_step_bound(
    final_sums: Any, included: Any, *, num_steps: Any, delta: Any, confidence: Any = 0.95, test: str = "gaussian", claim: Any = None, seed: Any = 0
) -> GaussianStepBound:
    """Lower-bound the per-step μ = 1/σ of ``num_steps`` composed Gaussian steps from each canary's sum over them (the hidden state).

    ``final_sums``: one per canary, in units of C: T + N(0, Σσ_t²) for an
    included canary (``included``, its fair coin), N(0, Σσ_t²) otherwise.
    ``test``: ``"gaussian"`` (the t test on the sums ÷ T, exact for Gaussian
    sums) or ``"order-statistics"`` (Xiang et al.'s test on the canaries' own
    coins against ``GaussianDP`` at √T · ``claim``, the per-step μ the claim
    states; ties broken by a draw from ``seed``). The refuted μ_T of the
    sums is divided by √T; ``parameter``, ``sigma``, ``epsilon`` and
    ``ceiling`` are per step. The order-statistics test's ceiling on μ_T
    depends on the number of canaries alone, so per step it falls as 1/√T:
    over many steps only the t test comes near the truth.

    >>> rng = np.random.default_rng(0)
    >>> coins = rng.random(4_000) < 0.5
    >>> sums = 16.0 * coins + rng.normal(0.0, 4.0 * 1.25, 4_000)  # 16 steps at σ = 1.25: per-step μ = 0.8
    >>> found = final_sum_step_bound(sums, coins, num_steps=16, delta=1e-5)
    >>> bool(0.9 * 0.8 < found.parameter < 0.8), found.method
    (True, 'gaussian, final sums of 16 steps')
    >>> bool(0.0 < final_sum_step_bound(sums, coins, num_steps=16, delta=1e-5, test="order-statistics", claim=0.8).parameter < 0.8)
    True
    """
    sums = as_scores(final_sums, "final_sums")
    member = np.asarray(included)
    if member.dtype != bool or member.shape != sums.shape or member.all() or not member.any():
        raise ValueError(f"`included` must be a boolean array shaped as `final_sums` {sums.shape} with canaries on both sides")
    steps = check_count(num_steps, "num_steps", minimum=1)
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    if test not in STEP_TESTS:
        raise ValueError(f"`test` must be one of {', '.join(STEP_TESTS)}, got {test!r}")
    root = math.sqrt(steps)
    guesses: dict[str, Any] = {}  # the order-statistics test's released guesses and its seed
    if test == "gaussian":
        summed = gaussian_step_bound(sums[member] / steps, sums[~member] / steps, delta=delta, confidence=confidence)  # N(1, Σσ_t²/T²) against N(0, ·)
        mu, kind, ceiling_mu = summed.parameter / root, summed.kind, math.inf
    else:
        if claim is None:
            raise ValueError("`claim` (the per-step μ = 1/σ the claim states) is needed by the order-statistics test: it fixes the guess count")
        mu_claim = check_positive(claim, "claim")
        seed = check_seed(seed)
        found = _order_statistics(sums, member, delta=delta, claim=root * mu_claim, confidence=confidence, seed=seed)
        mu = (0.0 if found.parameter is None else float(found.parameter)) / root
        kind, ceiling_mu = "lower bound", _composed_ceiling_mu(found, delta) / root
        guesses = {"num_guesses": found.num_guesses, "num_correct": found.num_correct, "seed": seed}
    return _step_result(
        mu,
        delta=delta,
        confidence=confidence,
        ceiling_mu=ceiling_mu,
        method=f"{test}, final sums of {steps} steps",
        num_in=int(member.sum()),
        num_out=int((~member).sum()),
        claim=None if test == "gaussian" else float(claim),
        kind=kind,
        **guesses,
    )


def _composed_ceiling_mu(found: Any, delta: float) -> float:
    """The μ-GDP whose ε is the order-statistics test's ceiling (0 where it has none)."""
    from .conversions import gdp_mu

    return float(gdp_mu(found.ceiling, delta)) if found.ceiling > 0.0 else 0.0
