"""Audits against subsampled, composed Gaussian mechanisms via PLD (Tight Auditing App. A, §5.5).

The trade-off curve of DP-SGD's mechanism (Poisson-subsampled Gaussian,
composed over T steps) has no closed form. dp_accounting's privacy-loss
distribution (PLD) gives δ(ε) for any ε, and every pair (ε, δ(ε)) is a
supporting line of the curve, so the curve is at least

    f_σ(α) >= max_ε max(0, 1 - δ(ε) - e^ε α, e^{-ε}(1 - δ(ε) - α)).

This is Algorithm 4, with two corrections we read as typos: the envelope of
supporting lines is their *maximum* (the paper writes min, which would give the
lowest line, not the curve), and the second line is e^{-ε}(1 - δ - α) (the
paper writes e^{-ε(1 - δ - α)}). We use a grid of ε values rather than of δ
values; both give supporting lines.

Conservative choices, each making the reported ε smaller:

* δ(ε) comes from the *pessimistic* PLD, so each line lies below the true
  curve and the mechanism is harder to reject;
* the search for the noise multiplier returns the larger-noise end of its
  bracket;
* the final ε(δ) of that noise comes from the *optimistic* PLD, rounded down
  by a relative 10⁻⁹ (our loss grid and dp_accounting's differ in the last
  digits).

The PLDs are dp_accounting's constructions, built with numpy by
:mod:`privaudit.stats.gaussian_pld` (the same distributions, bit for bit).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.results import Result
from .._core.validation import check_count, check_positive, check_probability, check_real
from .conversions import MAX_PLD_POINTS, gaussian_epsilon, gdp_epsilon, gdp_mu, pld_grid_points
from .families import GaussianDP
from .gaussian_pld import deltas_for_epsilons, epsilon_for_delta, subsampled_gaussian_pld
from .tradeoff import tradeoff_gdp

__all__ = ["StepToEndEstimate", "SubsampledGaussian", "step_to_end_epsilon"]

_SIGMA_RANGE = (0.1, 1024.0)
_RELATIVE_TOLERANCE = 1e-3
_DISCRETIZATION = 1e-3


@dataclasses.dataclass(frozen=True)
class SubsampledGaussian:
    """Audit against a Poisson-subsampled Gaussian mechanism composed ``num_steps`` times.

    Pass it as ``method`` to :func:`privaudit.epsilon_lower_bound`; the bound is
    on the noise multiplier σ (sensitivity 1), reported as ε(δ) of the whole
    mechanism. ``num_lines`` supporting lines approximate the trade-off curve.

    >>> SubsampledGaussian(sampling_prob=0.01, num_steps=100)
    SubsampledGaussian(sampling_prob=0.01, num_steps=100, num_lines=64)
    """

    sampling_prob: float = 1.0
    num_steps: int = 1
    num_lines: int = 64

    def __post_init__(self) -> None:
        sampling_prob = check_real(self.sampling_prob, "sampling_prob")
        if not 0.0 < sampling_prob <= 1.0:
            raise ValueError(f"`sampling_prob` must be in (0, 1], got {self.sampling_prob!r}")
        object.__setattr__(self, "sampling_prob", sampling_prob)
        object.__setattr__(self, "num_steps", check_count(self.num_steps, "num_steps", minimum=1))
        object.__setattr__(self, "num_lines", check_count(self.num_lines, "num_lines", minimum=2))

    def family_for(self, delta: float) -> _PLDFamily:
        self.smallest_noise(_DISCRETIZATION)  # refuses, with the estimate, a mechanism no noise level fits
        return _PLDFamily(self, delta)

    def tradeoff(self, alpha: ArrayLike, noise_multiplier: float) -> NDArray[np.float64] | float:
        """Lower envelope of the mechanism's trade-off curve at FPR ``alpha``.

        Without subsampling T steps are exactly (√T/σ)-GDP and the curve is
        G_{√T/σ} itself, no PLD needed:

        >>> from privaudit.stats.tradeoff import tradeoff_gdp
        >>> SubsampledGaussian(num_steps=4).tradeoff(0.1, 2.0) == tradeoff_gdp(0.1, 1.0)
        True
        >>> mechanism = SubsampledGaussian(sampling_prob=0.999, num_lines=256)
        >>> bool(abs(mechanism.tradeoff(0.1, 1.0) - tradeoff_gdp(0.1, 1.0)) < 0.01)
        True
        """
        noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
        rates = np.asarray(alpha, dtype=np.float64)
        if self.sampling_prob == 1.0:
            return tradeoff_gdp(rates, np.sqrt(float(self.num_steps)) / noise_multiplier)
        out = lower_envelope(_supporting_lines(self, noise_multiplier), rates)
        return out if out.ndim else float(out)

    def smallest_noise(self, discretization: float = 1e-3) -> float:
        """The smallest σ in the search range whose PLD fits ``MAX_PLD_POINTS`` grid points.

        >>> SubsampledGaussian(0.01, 1000).smallest_noise()
        0.1
        >>> bool(SubsampledGaussian(0.5, 10**5).smallest_noise() > 1.0)
        True
        """
        low, high = _SIGMA_RANGE
        # the optimistic PLD that reports ε must fit as well as the pessimistic one that draws the lines
        fits: Callable[[float], bool] = lambda sigma: pld_grid_points(sigma, self.sampling_prob, self.num_steps, discretization, False) <= MAX_PLD_POINTS  # noqa: E731
        if self.sampling_prob == 1.0 or fits(low):
            return low
        if not fits(high):
            raise ValueError(
                f"`num_steps` {self.num_steps} with `sampling_prob` {self.sampling_prob:g} needs a privacy-loss "
                f"distribution of about {pld_grid_points(high, self.sampling_prob, self.num_steps, discretization, False):.2g} "
                f"grid points even at noise {high:g}, more than the {MAX_PLD_POINTS:.0e} that fit in about a minute"
            )
        while high / low > 1.0 + _RELATIVE_TOLERANCE:
            middle = np.sqrt(low * high)
            low, high = (low, middle) if fits(middle) else (middle, high)
        return high


@functools.lru_cache(maxsize=256)
def _supporting_lines(
    mechanism: SubsampledGaussian, noise_multiplier: float, discretization: float = _DISCRETIZATION
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    pld = subsampled_gaussian_pld(noise_multiplier, mechanism.sampling_prob, mechanism.num_steps, pessimistic=True, discretization=discretization)
    # lines with ε > 50 only matter for α < e^-50: beyond any audit's resolution
    top = min(max(epsilon_for_delta(pld, 1e-12), 1e-3), 50.0)
    epsilons = np.linspace(0.0, top, mechanism.num_lines)
    return epsilons, deltas_for_epsilons(pld, epsilons)


def lower_envelope(lines: tuple[NDArray[np.float64], NDArray[np.float64]], rates: NDArray[np.float64]) -> NDArray[np.float64]:
    """max(0, max over lines of max(1 - δ - e^ε α, e^-ε (1 - δ - α))) at each α in ``rates``: the curve the lines support."""
    epsilons, deltas = lines
    flat = rates.ravel()[None, :]
    envelope = np.maximum(1.0 - deltas[:, None] - np.exp(epsilons)[:, None] * flat, np.exp(-epsilons)[:, None] * (1.0 - deltas[:, None] - flat))
    return np.asarray(np.maximum(envelope.max(axis=0), 0.0).reshape(rates.shape), dtype=np.float64)


@dataclasses.dataclass(frozen=True)
class _PLDFamily:
    mechanism: SubsampledGaussian
    delta: float
    name: str = "pld"
    parameter_name: str = "noise_multiplier"

    @property
    def proxy(self) -> GaussianDP:
        return GaussianDP(self.delta)

    def _rejected(self, sigma: float, fpr: float, fnr: float) -> bool:
        return bool(fnr < self.mechanism.tradeoff(fpr, sigma))  # a float: fpr is a float

    def parameter_from_errors(self, fpr: float, fnr: float) -> float:
        """Upper bound on σ: the least noise the error bounds rule out (inf if none)."""
        fpr, fnr = float(fpr), float(fnr)
        if self.mechanism.sampling_prob == 1.0:  # exactly (√T/σ)-GDP: σ <= √T/μ, rounded up
            mu = float(self.proxy.parameter_from_errors(fpr, fnr))
            return np.sqrt(float(self.mechanism.num_steps)) / mu * (1.0 + 1e-12) if mu > 0.0 else np.inf
        # below the smallest noise whose PLD fits, report that noise: an upper bound on σ all the same
        low, high = self.mechanism.smallest_noise(_DISCRETIZATION), _SIGMA_RANGE[1]
        if not self._rejected(high, fpr, fnr):
            return np.inf
        if self._rejected(low, fpr, fnr):
            return low
        while high / low > 1.0 + _RELATIVE_TOLERANCE:
            middle = np.sqrt(low * high)
            if self._rejected(middle, fpr, fnr):
                high = middle
            else:
                low = middle
        return high

    def epsilon(self, sigma: float, finest: float = 1e-4) -> float:
        """ε(δ) of noise ``sigma`` from the optimistic PLD (a lower estimate) on the finest grid from ``finest`` that fits."""
        if not np.isfinite(sigma):
            return 0.0
        m = self.mechanism
        if m.sampling_prob == 1.0:
            return float(gdp_epsilon(np.sqrt(float(m.num_steps)) / sigma, self.delta))  # already a float for a scalar
        # a coarser optimistic PLD only lowers ε
        grid = next((d for d in (finest, _DISCRETIZATION) if pld_grid_points(sigma, m.sampling_prob, m.num_steps, d, False) <= MAX_PLD_POINTS), _DISCRETIZATION)
        if gdp_epsilon(np.sqrt(float(m.num_steps)) / sigma, self.delta) == 0.0:
            return 0.0  # subsampling only lowers ε: already 0 without it
        pld = subsampled_gaussian_pld(sigma, m.sampling_prob, m.num_steps, pessimistic=False, discretization=grid)
        # rounded down by a relative 1e-9: the losses' float grid may differ from dp_accounting's in the last digits
        return max(0.0, epsilon_for_delta(pld, self.delta) * (1.0 - 1e-9))


@dataclasses.dataclass(frozen=True)
class StepToEndEstimate(Result):
    """End-to-end ε estimate composed from a per-step lower bound (§5.5)."""

    epsilon: float
    step_epsilon: float
    noise_multiplier: float
    delta: float
    num_steps: int
    sampling_prob: float
    kind: str = "estimate"


def step_to_end_epsilon(step_epsilon: float, *, delta: float, num_steps: int, sampling_prob: float = 1.0) -> StepToEndEstimate:
    """Turn a per-step ε lower bound into an end-to-end ε estimate (Tight Auditing §5.5).

    The per-step bound at δ is matched by a Gaussian mechanism of noise σ
    (σ = 1/μ with μ = :func:`~privaudit.gdp_mu`). Without subsampling, T steps
    compose to √T/σ-GDP exactly; with Poisson subsampling at rate q the
    subsampled mechanism is composed through dp_accounting's PLD. The result
    is an *estimate*, not a bound: it assumes every step is as leaky as the
    audited one and is tightly characterised by a Gaussian.

    >>> estimate = step_to_end_epsilon(1.0, delta=1e-5, num_steps=100)
    >>> round(estimate.epsilon, 2), estimate.kind  # μ = 10 × 0.26805
    (14.43, 'estimate')
    """
    step_epsilon = check_positive(step_epsilon, "step_epsilon", allow_zero=True)
    delta = check_probability(delta, "delta")
    num_steps = check_count(num_steps, "num_steps", minimum=1)
    sampling_prob = check_real(sampling_prob, "sampling_prob")
    if not 0.0 < sampling_prob <= 1.0:
        raise ValueError(f"`sampling_prob` must be in (0, 1], got {sampling_prob:g}")
    mu = gdp_mu(step_epsilon, delta) if step_epsilon > 0 else 0.0
    sigma = 1.0 / mu if mu > 0 else np.inf
    epsilon: float | NDArray[np.float64]
    if mu == 0.0:
        epsilon = 0.0
    elif sampling_prob == 1.0:
        epsilon = gdp_epsilon(mu * np.sqrt(num_steps), delta)
    else:
        epsilon = gaussian_epsilon(sigma, delta, sampling_prob=sampling_prob, num_steps=num_steps, pessimistic=False)
    return StepToEndEstimate(
        epsilon=float(epsilon),
        step_epsilon=step_epsilon,
        noise_multiplier=float(sigma),
        delta=delta,
        num_steps=num_steps,
        sampling_prob=sampling_prob,
    )
