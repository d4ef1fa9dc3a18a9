"""An end-to-end DP-SGD claim and a per-step lower bound, compared like for like, both ways.

A white-box audit of DP-SGD with canaries in every step bounds one step: the
Gaussian mechanism of noise σ, μ = 1/σ. A user's claim is end to end: (ε, δ)
for T steps of the Poisson-subsampled Gaussian at rate q. The two refer to
different quantities, so one is converted, with the q and T that ran:

* **claim → per step**: the claim holds only if σ >= σ_min, the least noise
  whose T steps at rate q are (ε, δ)-DP (:func:`least_noise_for_claim`); one
  step is then at most (1/σ_min)-GDP, and the per-step bound is compared
  with ε(δ) of that (:func:`per_step_claim`, rounded up);
* **bound → end to end**: the per-step bound μ_lo says σ <= 1/μ_lo at its
  confidence, and T steps at rate q with that noise are at least as leaky as
  ε(δ) of the subsampled, composed Gaussian at σ = 1/μ_lo
  (:func:`end_to_end_from_step`, rounded down).

Each conversion errs on the side of *not* flagging: σ_min is the lower end
of a bisection on the optimistic PLD (which understates ε, so overstates how
little noise suffices), and the end-to-end ε comes from the optimistic PLD
too. Both rest on what DP-SGD is: Gaussian noise and Poisson sampling at
the q that ran; the verdict says so in its ``conversion``. Both directions
test the same statistic (μ_lo against 1/σ_min), so they agree, up to the
PLD's discretisation, and count as one test.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Any

from .._core.validation import check_count, check_positive, check_probability
from .conversions import gaussian_epsilon, pld_grid_points
from .pld import SubsampledGaussian
from .verdict import Claim, Verdict, compare

__all__ = [
    "CONVERTED",
    "end_to_end_from_step",
    "least_noise_for_claim",
    "most_steps_for_claim",
    "noise_shortfall",
    "per_step_claim",
    "step_and_end_verdicts",
]

CONVERTED = "the user's end-to-end claim, converted to one step"
_GRID = 1e-3  # PLD discretisation: coarser only lowers the optimistic ε, the safe side for both conversions
_TOLERANCE = 1e-3  # relative width of the noise bisection
_POINTS = 2e5  # grid points of a PLD that takes about a second


def _check_run(sampling_prob: float, num_steps: int) -> tuple[float, int]:
    q = check_positive(sampling_prob, "sampling_prob")
    if q > 1.0:
        raise ValueError(f"`sampling_prob` must be in (0, 1], got {q:g}")
    return q, check_count(num_steps, "num_steps", minimum=1)


@functools.lru_cache(maxsize=64)
def _optimistic_epsilon(sigma: float, delta: float, q: float, steps: int) -> float:
    """ε(δ) from the optimistic PLD: on a grid of 1e-3, or 1e-2 where that would pass ``_POINTS`` points (a coarser grid only lowers ε).

    Cached: a verdict and the null it refutes compose the same step over the same run.
    """
    if q == 1.0:
        return float(gaussian_epsilon(sigma, delta, num_steps=steps, pessimistic=False))
    grid = _GRID if pld_grid_points(sigma, q, steps, _GRID, False) <= _POINTS else 10 * _GRID
    if pld_grid_points(sigma, q, steps, grid, False) > _POINTS:
        sigma = SubsampledGaussian(q, steps).smallest_noise(grid)  # more noise only lowers ε: still on the safe side
    return float(gaussian_epsilon(sigma, delta, sampling_prob=q, num_steps=steps, pessimistic=False, discretization=grid))


@functools.lru_cache(maxsize=64)
def least_noise_for_claim(epsilon: float, delta: float, *, sampling_prob: float, num_steps: int) -> float:
    """σ_min: no noise below it makes ``num_steps`` Poisson-subsampled Gaussian steps at ``sampling_prob`` (ε, δ)-DP.

    The optimistic PLD understates ε(σ), so σ_min is at most the exact least
    noise; the bisection returns its lower end, where the claim still fails.

    >>> sigma = least_noise_for_claim(4.0, 1e-5, sampling_prob=1.0, num_steps=1)
    >>> round(sigma, 3), bool(gaussian_epsilon(sigma, 1e-5) > 4.0 > gaussian_epsilon(1.002 * sigma, 1e-5))  # one step: exactly μ-GDP
    (1.081, True)
    """
    epsilon = check_positive(epsilon, "claimed_epsilon")
    delta = check_probability(delta, "claimed_delta")
    q, steps = _check_run(sampling_prob, num_steps)
    low, high = 1.0, 1.0
    while _optimistic_epsilon(low, delta, q, steps) <= epsilon:
        low /= 2.0
        if low < 1e-3:
            return 0.0  # any noise this small meets the claim: it implies no noise at all
    while _optimistic_epsilon(high, delta, q, steps) > epsilon:
        high *= 2.0
    while high / low > 1.0 + _TOLERANCE:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if _optimistic_epsilon(middle, delta, q, steps) > epsilon else (low, middle)
    return float(low)


def most_steps_for_claim(epsilon: float, delta: float, *, noise_multiplier: float, sampling_prob: float, num_steps: int) -> int:
    """The most steps (at most ``num_steps``) whose optimistic ε at σ and q stays within ``epsilon``: where a calibration ran out; 0 if none.

    The optimistic PLD understates ε, so this errs high (it never blames a
    run for stopping too late when it did not).

    >>> most_steps_for_claim(4.0, 1e-5, noise_multiplier=1.0, sampling_prob=1.0, num_steps=10)  # one step is 4.38 > 4
    0
    """
    epsilon = check_positive(epsilon, "claimed_epsilon")
    delta = check_probability(delta, "claimed_delta")
    q, steps = _check_run(sampling_prob, num_steps)
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    low, high = 0, steps  # ε(low) <= claim (or low = 0); the answer is in [low, high]
    if _optimistic_epsilon(sigma, delta, q, steps) <= epsilon:
        return steps
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _optimistic_epsilon(sigma, delta, q, middle) <= epsilon else (low, middle)
    return low


def noise_shortfall(
    sigma: float,
    claim: Claim,
    *,
    sampling_prob: float,
    num_steps: int,
    read_from: str = "the optimizer's noise_multiplier",
    far_cause: str = "lowered after make_private, or a claim its settings never met",
) -> tuple[float, str | None]:
    """(σ_min, the finding when the σ that ran is below it, else None): a run with less noise than its claim allows cannot meet it.

    σ_min is :func:`least_noise_for_claim` at the q and T that ran (its lower
    end, so a σ near it is not blamed). Within a factor 2 of σ_min the likely
    cause is a run past the steps σ was calibrated for, and the finding says
    how many steps σ supports; further below, ``far_cause``.

    >>> claim = Claim(4.0, 1e-5)
    >>> round(noise_shortfall(2.0, claim, sampling_prob=1.0, num_steps=1)[0], 3), noise_shortfall(2.0, claim, sampling_prob=1.0, num_steps=1)[1]
    (1.081, None)
    >>> print(noise_shortfall(0.1, claim, sampling_prob=1.0, num_steps=1)[1])
    σ observed 0.1 (the optimizer's noise_multiplier) is below the σ ≥ 1.081 that ε = 4 at δ = 1e-05 with q = 1 and T = 1 implies: the run cannot meet the claim (lowered after make_private, or a claim its settings never met)
    """
    if claim.quantity != "end-to-end":
        raise ValueError(f"`claim` must be an end-to-end claim to set the least noise of a run, got a {claim.quantity} claim")
    sigma = check_positive(sigma, "noise_multiplier", allow_zero=True)
    q, steps = _check_run(sampling_prob, num_steps)
    sigma_min = least_noise_for_claim(claim.epsilon, claim.delta, sampling_prob=q, num_steps=steps)
    if sigma >= sigma_min:
        return sigma_min, None
    cause = far_cause
    if sigma >= 0.5 * sigma_min:  # close: a calibration for fewer steps than ran is the likely cause (a bisection of seconds)
        most = most_steps_for_claim(claim.epsilon, claim.delta, noise_multiplier=sigma, sampling_prob=q, num_steps=steps)
        cause = f"σ = {sigma:.4g} meets the claim for at most {most} steps: the run took {steps}, past the steps it was calibrated for, or at a higher q"
    run = f"ε = {claim.epsilon:g} at δ = {claim.delta:g} with q = {q:.4g} and T = {steps}"
    return sigma_min, f"σ observed {sigma:.4g} ({read_from}) is below the σ ≥ {sigma_min:.4g} that {run} implies: the run cannot meet the claim ({cause})"


def per_step_claim(claim: Claim, *, sampling_prob: float, num_steps: int, delta: float | None = None) -> tuple[Claim, float]:
    """(the per-step claim at ``delta`` (default the claim's), σ_min) implied by an end-to-end ``claim`` for T steps at rate q.

    >>> step, sigma = per_step_claim(Claim(4.0, 1e-5), sampling_prob=1.0, num_steps=1)
    >>> step.quantity, round(step.epsilon, 3), step.source == CONVERTED
    ('per-step', 4.0, True)
    """
    if claim.quantity != "end-to-end":
        raise ValueError(f"`claim` must be an end-to-end claim to convert to one step, got a {claim.quantity} claim")
    sigma = least_noise_for_claim(claim.epsilon, claim.delta, sampling_prob=sampling_prob, num_steps=num_steps)
    at = claim.delta if delta is None else check_probability(delta, "delta")
    step_epsilon = sys.float_info.max if sigma == 0.0 else float(gaussian_epsilon(sigma, at, pessimistic=True))
    return Claim(epsilon=step_epsilon, delta=at, quantity="per-step", source=CONVERTED), sigma


def end_to_end_from_step(step_mu: float, delta: float, *, sampling_prob: float, num_steps: int) -> float:
    """ε(δ) of ``num_steps`` steps at rate q with noise 1/``step_mu``: the end-to-end lower bound a per-step μ lower bound gives.

    >>> round(end_to_end_from_step(0.5, 1e-5, sampling_prob=1.0, num_steps=4), 3) == round(gaussian_epsilon(1.0, 1e-5, pessimistic=False), 3)
    True
    """
    mu = check_positive(step_mu, "step_mu", allow_zero=True)
    delta = check_probability(delta, "delta")
    q, steps = _check_run(sampling_prob, num_steps)
    if mu == 0.0:
        return 0.0
    return max(0.0, _optimistic_epsilon(1.0 / mu, delta, q, steps))


def step_and_end_verdicts(
    step_bound: Any, claim: Claim, *, sampling_prob: float, run_steps: int, observed_steps: int, where: str
) -> tuple[Verdict, Verdict, float]:
    """Both verdicts of a per-step GDP bound (``step_bound``: ε at its δ, μ in ``parameter``) against an end-to-end ``claim``.

    ``run_steps`` is the run the claim covers (it sets σ_min), ``observed_steps``
    the steps the bound composes over (a run's subset: fewer steps only lower
    ε). ``where`` says where q and T were read. Returns (per-step verdict,
    end-to-end verdict, σ_min).
    """
    step_claim, sigma_min = per_step_claim(claim, sampling_prob=sampling_prob, num_steps=run_steps, delta=step_bound.delta)
    run = f"q = {sampling_prob:.4g} and T = {run_steps} ({where})"
    per_step = compare(
        float(step_bound.epsilon),
        bound_delta=float(step_bound.delta),
        quantity="per-step",
        claim=step_claim,
        conversion=f"claim converted to one step: ε = {claim.epsilon:g} at δ = {claim.delta:g} with {run} needs σ ≥ {sigma_min:.4g} (optimistic PLD), so one step is at most {1.0 / sigma_min if sigma_min else math.inf:.4g}-GDP",
    )
    end = end_to_end_from_step(float(step_bound.parameter), claim.delta, sampling_prob=sampling_prob, num_steps=observed_steps)
    end_to_end = compare(
        end,
        bound_delta=claim.delta,
        quantity="end-to-end",
        claim=claim,
        conversion=(
            f"bound converted to the whole run: per-step μ ≥ {float(step_bound.parameter):.4g} (σ ≤ {1.0 / float(step_bound.parameter) if step_bound.parameter else math.inf:.4g}) "
            f"composed over {observed_steps} steps at q = {sampling_prob:.4g} (optimistic PLD); assumes Poisson sampling at that q"
        ),
    )
    return per_step, end_to_end, sigma_min
