"""Privacy checks for other projects' test suites: :func:`assert_dp` and :func:`assert_mechanism_dp`.

A DP library's test calls ``assert_dp`` on one privatized aggregation step
(or any mechanism that releases a noisy sum of clipped per-example vectors)
with the (ε, δ) it claims. The check feeds it Dirac gradient canaries on
coordinates that no other example uses, reads the released coordinates
(:mod:`privaudit.observation.gradient`) and computes a lower bound on ε with the
statistical core. It fails when the bound exceeds the claim: the claim is
then rejected at the stated confidence, and a correct mechanism fails with
probability at most 1 - confidence (less in practice, as the bound is below
the true ε).

``family="gdp"`` (default) reads the claim as the Gaussian mechanism
calibrated to (ε, δ), i.e. μ-GDP: what DP-SGD's accountants assume, and the
tight audit of Tight Auditing. ``family="eps-delta"`` tests the weaker
(ε, δ)-DP claim itself, valid for any mechanism but far less sensitive.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._core.stated_claims import missing_claim
from ._core.validation import check_choice, check_count, check_positive, check_probability
from .canaries.gradient import GradientCanary
from .observation.gradient import collect_gradient_observations
from .stats.bounds import EpsilonLowerBound, epsilon_lower_bound

__all__ = ["assert_dp", "assert_mechanism_dp"]


def assert_dp(
    release: Callable[[np.ndarray], np.ndarray],
    *,
    epsilon: float,
    delta: float,
    clip_norm: float = 1.0,
    denominator: float = 1.0,
    family: str = "gdp",
    num_observations: int = 10_000,
    canaries_per_step: int = 100,
    confidence: float = 0.95,
    seed: int = 0,
) -> EpsilonLowerBound:
    """Fail if ``release`` leaks more than the claimed (ε, δ) per call, at ``confidence``.

    Parameters
    ----------
    release : callable
        ``release(rows) -> vector``: one step of the mechanism under test on
        per-example vectors ``rows`` (shape (k, d)); returns the released
        d-vector: the noisy sum of the clipped rows, divided by ``denominator``.
    epsilon, delta : the claim for one call
    clip_norm : float > 0
        The norm each row is clipped to (the sensitivity of the sum).
    denominator : float > 0
        What the release divides the noisy sum by (1 for a sum, the expected
        batch size for a mean).
    family : {"gdp", "eps-delta"}
        GDP uses the fixed threshold 0.5 (halfway between the normalised
        means); (ε, δ) needs extreme thresholds, chosen on a held-out split.
    num_observations : int
        Canary ("in") observations; the mechanism is called
        num_observations / canaries_per_step times with d = 10 × canaries_per_step.
    canaries_per_step : int
    confidence : float in (0, 1)
    seed : int

    Returns
    -------
    EpsilonLowerBound
        The bound, when the check passes.

    Raises
    ------
    AssertionError
        With the lower bound, the claim, the confidence and the numbers of
        observations, when the claim is rejected.

    Examples
    --------
    A Gaussian mechanism with the noise its claim needs passes; one with half
    the noise fails:

    >>> from privaudit.stats.conversions import gdp_mu
    >>> rng = np.random.default_rng(0)
    >>> def gaussian(sigma):
    ...     def release(rows):
    ...         clipped = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    ...         return clipped.sum(axis=0) + rng.normal(0.0, sigma, rows.shape[1])
    ...     return release
    >>> sigma = 1 / gdp_mu(2.0, 1e-5)
    >>> assert_dp(gaussian(sigma), epsilon=2.0, delta=1e-5).epsilon < 2.0
    True
    >>> assert_dp(gaussian(sigma / 2), epsilon=2.0, delta=1e-5)
    Traceback (most recent call last):
    ...
    AssertionError: privacy claim rejected: ε >= ... at 95% confidence (gdp, Clopper–Pearson), claimed ε = 2 at δ = 1e-05; 10000 canary and 90000 non-canary observations
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    family = check_choice(family, "family", ("gdp", "eps-delta"))
    num_observations = check_count(num_observations, "num_observations", minimum=100)
    canaries_per_step = check_count(canaries_per_step, "canaries_per_step", minimum=1, maximum=num_observations)
    confidence = check_probability(confidence, "confidence")
    observations = collect_gradient_observations(
        release,
        num_steps=-(-num_observations // canaries_per_step),
        canaries_per_step=canaries_per_step,
        num_slots=10 * canaries_per_step,
        clip_norm=clip_norm,
        denominator=denominator,
        canary=GradientCanary(kind="dirac", slot_size=1, norm=100.0),  # norm >> C: a missing clip shows
        seed=seed,
    )
    bound = epsilon_lower_bound(
        observations.in_scores,
        observations.out_scores,
        delta=delta,
        method=family,
        confidence=confidence,
        threshold=0.5 if family == "gdp" else "split",
        seed=seed,
    )
    if bound.epsilon > epsilon:
        raise AssertionError(
            f"privacy claim rejected: ε >= {bound.epsilon:.4g} at {confidence:.0%} confidence ({family}, Clopper–Pearson), "
            f"claimed ε = {epsilon:g} at δ = {delta:g}; {bound.num_in} canary and {bound.num_out} non-canary observations"
        )
    return bound


def assert_mechanism_dp(
    mechanism: Callable[[np.ndarray, int, np.random.Generator], np.ndarray],
    dataset: np.ndarray,
    neighbour: np.ndarray | None = None,
    *,
    epsilon: float | None = None,
    delta: float = 0.0,
    rho: float | None = None,
    samples: int = 5000,
    pilot_samples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    **settings: object,
):
    """Fail if ``mechanism`` leaks more than its (ε, δ) or ρ-zCDP claim between ``dataset`` and ``neighbour``.

    ``mechanism(dataset, size, rng)`` returns ``size`` outputs on one
    dataset (:mod:`privaudit.mechanisms`); ``neighbour`` is searched when
    None (then pass ``relation="add-remove"`` or ``"replace"``). The claim is
    yours: ``epsilon=`` (or ``rho=``) and ``delta=``; without one the check
    raises, naming what the mechanism states in its own ``claim`` attribute
    (evidence, never the yardstick). The claim is rejected at ``confidence`` (Bonferroni over every test), so a correct
    mechanism fails with probability at most 1 - confidence. Returns the
    audit's result when the check passes; other ``settings`` are
    :class:`privaudit.audits.mechanism.config.MechanismAuditConfig` fields.

    Examples
    --------
    >>> def laplace_count(dataset, size, rng):
    ...     return len(dataset) + rng.laplace(0.0, 1.0, size)
    >>> assert_mechanism_dp(laplace_count, np.zeros(5), np.zeros(6), epsilon=1.0).rejected
    False
    >>> assert_mechanism_dp(laplace_count, np.zeros(5), np.zeros(6), epsilon=0.25)
    Traceback (most recent call last):
    ...
    AssertionError: privacy claim rejected: ε >= ... at 95% confidence, claimed (0.25, 0)-DP; pair: given: D plus the record (0.0,); 5000 held-out samples per side
    >>> laplace_count.claim = {"epsilon": 1.0, "delta": 0.0}  # what the mechanism says of itself
    >>> assert_mechanism_dp(laplace_count, np.zeros(5), np.zeros(6))
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` or `rho` must be given (the claim under test is yours); `mechanism` states ε = 1, δ = 0 in its own `claim` attribute, evidence only: pass epsilon=1, delta=0 to test it
    """
    from .audits.mechanism.audit import audit_mechanism

    if epsilon is None and rho is None:  # the mechanism's own `claim` would vouch for itself
        raise ValueError(missing_claim(mechanism, "`mechanism`", epsilon_flag="epsilon=", delta_flag="delta=", rho_flag="rho="))
    if dataset is None:  # the audit's own default dataset would be tested instead of the user's: a silent wrong answer
        raise ValueError("`dataset` must be the records your mechanism runs on (an array), got None")
    result = audit_mechanism(
        mechanism,
        dataset,
        neighbour,
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        samples=samples,
        pilot_samples=pilot_samples,
        confidence=confidence,
        seed=seed,
        **settings,
    )
    if result.rejected:
        raise AssertionError(
            f"privacy claim rejected: ε >= {result.epsilon:.4g} at {confidence:.0%} confidence, claimed {result.claim}; "
            f"pair: {result.pair.how}; {samples} held-out samples per side"
        )
    return result
