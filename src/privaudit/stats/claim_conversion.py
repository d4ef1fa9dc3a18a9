"""Convert a DP-SGD claim between quantities, with the sampling rate and steps that ran.

A user claims (ε, δ) for the whole training run; an audit that observes one
step bounds a single step's ε. :func:`per_step_claim` turns the end-to-end
claim into the per-step claim it implies: the noise multiplier σ that T
steps of the Poisson-subsampled Gaussian mechanism at rate q need for that
(ε, δ), then one step's ε at that σ (at the canary's own rate q_c), so that
the per-step bound meets a per-step claim.

Safe side: σ is calibrated with the PLD's *optimistic* ε(δ) (a lower
estimate), so it is at most the σ the claim truly implies, and one step's ε
at it errs high (exact GDP for q_c = 1, the pessimistic PLD otherwise). The
converted claim can only be looser than the truth: a flag it raises is a
true flag.

>>> claim = per_step_claim(Claim(1.2682, 1e-5), sampling_rate=1.0, num_steps=1, canary_rate=1.0, delta=1e-5)
>>> claim.quantity, round(claim.epsilon, 3)
('per-step', 1.268)
"""

from __future__ import annotations

import math

import numpy as np

from .conversions import gaussian_epsilon, gdp_epsilon, gdp_mu
from .roots import brentq
from .verdict import Claim

__all__ = ["end_to_end_noise", "per_step_claim"]


def end_to_end_noise(epsilon: float, delta: float, *, sampling_rate: float, num_steps: int) -> float:
    """The noise multiplier at which T steps at rate q are (ε, δ)-DP, by the optimistic PLD (at most the true one).

    >>> round(end_to_end_noise(gaussian_epsilon(3.0, 1e-5), 1e-5, sampling_rate=1.0, num_steps=1), 6)
    3.0
    """
    if sampling_rate == 1.0:  # exactly (√T/σ)-GDP
        return float(np.sqrt(float(num_steps)) / gdp_mu(epsilon, delta))

    def excess(log_sigma: float) -> float:
        return gaussian_epsilon(math.exp(log_sigma), delta, sampling_prob=sampling_rate, num_steps=num_steps, pessimistic=False) - epsilon

    low, high = 0.0, 0.0
    while excess(low) <= 0.0:  # ε falls as σ grows: find σ with ε above the claim
        low -= math.log(2.0)
        if low < math.log(0.05):
            raise ValueError(f"`claimed_epsilon` {epsilon:g} at q = {sampling_rate:g}, T = {num_steps} implies noise below 0.05: too large to convert")
    while excess(high) > 0.0:
        high += math.log(2.0)
    # the largest log σ still above the claim, to 1e-4 relative: σ never exceeds the claim's true σ
    return float(math.exp(brentq(excess, low, high, xtol=1e-4)) * (1.0 - 1e-4))


def per_step_claim(claim: Claim, *, sampling_rate: float, num_steps: int, canary_rate: float, delta: float) -> Claim:
    """The per-step claim at δ = ``delta`` that an end-to-end ``claim`` implies for DP-SGD with rate q and T steps.

    ``canary_rate`` is the chance a canary is in a step (1: every step).
    """
    if claim.quantity != "end-to-end":
        raise ValueError(f"`claim` must be an end-to-end claim to convert to per step, got {claim.quantity!r}")
    sigma = end_to_end_noise(claim.epsilon, claim.delta if claim.delta > 0.0 else delta, sampling_rate=sampling_rate, num_steps=num_steps)
    if canary_rate == 1.0:
        step = float(gdp_epsilon(1.0 / sigma, delta))
    else:
        step = gaussian_epsilon(sigma, delta, sampling_prob=canary_rate, num_steps=1)
    return Claim(epsilon=step, delta=delta, quantity="per-step", source=claim.source)


def conversion_text(claim: Claim, step: Claim, *, sampling_rate: float, num_steps: int, canary_rate: float) -> str:
    """How :func:`per_step_claim` converted, in words."""
    return (
        f"the end-to-end claim (ε = {claim.epsilon:g}, δ = {claim.delta:g}) converted to per step with the q = {sampling_rate:g} and"
        f" T = {num_steps} steps that ran: it implies one step at canary rate {canary_rate:g} is (ε = {step.epsilon:.4g}, δ = {step.delta:g})-DP"
    )
