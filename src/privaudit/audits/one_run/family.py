"""The claim's own family as the one-run null: DP-SGD (q, σ, T) from the claim being tested, compared like for like.

A white-box one-run audit puts each gradient canary on its own audit
coordinates (its slot). The noise of DP-SGD is isotropic, so its slots get
independent noise; each canary is clipped alone and sampled by its own coin.
Given the inclusion draw, the canaries' observations are therefore
independent, and each is a post-processing of T Poisson-subsampled Gaussian
steps at the canary's rate q_c with the run's noise σ: exactly the
independent-canary setting in which the order-statistics test of Xiang et al.
is proven (docs/one-run.md). Input canaries (black box) share the model and
interfere, so they keep the f-DP recursion, valid for any f-DP mechanism.

The claim fixes the null: the user's end-to-end (ε, δ) for the run's q and T
becomes σ_min, the least noise that meets it (:func:`~privaudit.stats.dpsgd_claims.least_noise_for_claim`),
or, for privaudit's own DP-SGD, the noise multiplier that ran. The bound
refutes "DP-SGD with σ >= σ_r" and implies ε(σ_r); the claim is compared in
that same family, as ε(σ_min) from the same code, so a flag means σ_r < σ_min.
With canaries in every step (q_c = 1) T steps are exactly (√T/σ)-GDP, and
the null is μ-GDP.

>>> claim = Claim(epsilon=4.0, delta=1e-5)
>>> null, parameter, in_family, conversion = dpsgd_null(claim, noise_multiplier=None, sampling_rate=1.0, canary_rate=1.0, num_steps=100, delta=1e-5)
>>> null.name, round(parameter, 3), round(in_family.epsilon, 2), conversion[:32]
('gdp', 0.926, 4.0, 'the claim as DP-SGD: noise sigma')
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ...stats.dpsgd_claims import least_noise_for_claim
from ...stats.families import GaussianDP
from ...stats.one_run_nulls import DPSGD
from ...stats.verdict import Claim

__all__ = ["dpsgd_null"]


def dpsgd_null(
    claim: Claim, *, noise_multiplier: float | None, sampling_rate: float, canary_rate: float, num_steps: int, delta: float
) -> tuple[Any, float, Claim, str]:
    """(the null family, the claim's parameter in it, the claim in that family at ``delta``, the conversion in words).

    ``noise_multiplier``: the σ that ran, when the claim is privaudit's own
    accountant's for it; None converts the user's (ε, δ) for rate
    ``sampling_rate`` and ``num_steps`` steps to σ_min. The canary's mechanism
    runs at ``canary_rate``.
    """
    sigma = (
        float(noise_multiplier)
        if noise_multiplier is not None
        else least_noise_for_claim(claim.epsilon, claim.delta, sampling_prob=sampling_rate, num_steps=num_steps)
    )
    if not sigma > 0.0:
        raise ValueError(f"`claimed_epsilon` {claim.epsilon:g} implies no noise for {num_steps} steps at rate {sampling_rate:g}: it cannot be tested as DP-SGD")
    null: Any = GaussianDP(delta) if canary_rate == 1.0 else DPSGD(canary_rate, num_steps, delta)
    parameter = math.sqrt(num_steps) / sigma if canary_rate == 1.0 else sigma
    leak = parameter if canary_rate == 1.0 else 1.0 / sigma
    source = (
        "the noise multiplier that ran"
        if noise_multiplier is not None
        else f"the least noise meeting ε = {claim.epsilon:g}, δ = {claim.delta:g} at q = {sampling_rate:g}, T = {num_steps}"
    )
    conversion = (
        f"the claim as DP-SGD: noise sigma >= {sigma:.4g} ({source}); canaries at q = {canary_rate:g} over T = {num_steps} steps; "
        f"compared in that family, as its epsilon at delta = {delta:g}"
    )
    in_family = dataclasses.replace(claim, epsilon=float(null.epsilon(leak)), delta=delta)
    return null, float(parameter), in_family, conversion
