"""Privacy families an audit can test against, as small value objects.

A family turns an attack's upper-bounded error rates (ᾱ, β̄) into a lower
bound on its privacy parameter θ, and θ into ε(δ). Every family offers:

* ``parameter_from_errors(fpr, fnr)``: vectorised; the smallest θ whose
  privacy region still contains (fpr, fnr). With confidence upper bounds in,
  a confidence lower bound on θ comes out. Also used to rank thresholds.
* ``epsilon(theta)``: ε at the family's δ, rounded down.
* ``region(alpha, theta)``: the band (low, high) of false-negative rates that
  the privacy region allows at false-positive rate α; the Bayesian credible
  bound (Tight Auditing Eq. 13) integrates the posterior over this band.

The region of a symmetric trade-off function f is f(α) <= β <= 1 - f(1 - α).
"""

from __future__ import annotations

import dataclasses
import math
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special  # Φ and Φ⁻¹ without importing scipy.stats (a third of a second)

from .._core.validation import check_choice
from .conversions import gdp_epsilon
from .one_run_nulls import DPSGD, LaplaceDP, SubsampledGaussianDP, curve_knots
from .tradeoff import _eps_delta_curve

__all__ = ["NULL_FAMILIES", "EpsilonDelta", "GaussianDP", "check_null_request", "null_family"]


@dataclasses.dataclass(frozen=True)
class GaussianDP:
    """μ-GDP (Tight Auditing Eq. 12): μ >= Φ⁻¹(1 - ᾱ) - Φ⁻¹(β̄), then ε(δ) by Eq. 6.

    >>> family = GaussianDP(delta=1e-5)
    >>> float(family.parameter_from_errors(0.05, 0.05)).__round__(4)  # 2 × 1.6449
    3.2897
    """

    delta: float
    name: str = "gdp"
    parameter_name: str = "mu"

    def parameter_from_errors(self, fpr: ArrayLike, fnr: ArrayLike) -> NDArray[np.float64]:
        with np.errstate(divide="ignore", invalid="ignore"):  # Φ⁻¹(0) - Φ⁻¹(1) is inf - inf: nan, as scipy.stats gives it
            mu = -special.ndtri(fpr) - special.ndtri(fnr)  # Φ⁻¹(1 - ᾱ) - Φ⁻¹(β̄), as norm.isf and norm.ppf compute them
        return cast("NDArray[np.float64]", np.maximum(mu, 0.0))

    def epsilon(self, theta: float) -> float:
        return gdp_epsilon(float(theta), self.delta) if np.isfinite(theta) else np.inf

    def region(self, alpha: NDArray[np.float64], theta: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        z = -special.ndtri(alpha)
        return special.ndtr(z - theta), special.ndtr(z + theta)

    # the one-run order-statistics null (privaudit.stats.one_run_nulls): N(0, 1) out, N(μ, 1) in, leak μ
    leak_range = (1e-4, 40.0)

    def knots(self, leak: float, s_lo: float, s_hi: float, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        def curve(t: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:  # t: distance of x from μ/2
            wrong = special.ndtr(-t - 0.5 * leak)
            return wrong + special.ndtr(-t + 0.5 * leak), wrong

        return curve_knots(curve, s_lo, s_hi, size)

    def positive_share(self, leak: float, s: float) -> float:
        return 0.5

    def parameter(self, leak: float) -> float:
        return leak

    def describe(self, leak: float) -> str:
        return f"mu-GDP with mu <= {leak:.4g}"


@dataclasses.dataclass(frozen=True)
class EpsilonDelta:
    """(ε, δ)-DP (Tight Auditing Eq. 9); δ = 0 gives pure ε-DP, and the name says which.

    ε >= max(log(1 - δ - ᾱ) - log β̄, log(1 - δ - β̄) - log ᾱ, 0), in logs.

    >>> family = EpsilonDelta(delta=0.0)
    >>> round(float(family.parameter_from_errors(0.1, 0.2)), 4), family.name  # log(0.8/0.1)
    (2.0794, 'pure')
    >>> EpsilonDelta(delta=1e-5).name
    'eps-delta'
    """

    delta: float
    parameter_name: str = "epsilon"

    @property
    def name(self) -> str:
        """The method a bound of this family records: "pure" at δ = 0, else "eps-delta"."""
        return "pure" if self.delta == 0.0 else "eps-delta"

    def parameter_from_errors(self, fpr: ArrayLike, fnr: ArrayLike) -> NDArray[np.float64]:
        fpr = np.asarray(fpr, dtype=np.float64)
        fnr = np.asarray(fnr, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            first = np.log1p(np.clip(-self.delta - fpr, -1.0, 0.0)) - np.log(fnr)
            second = np.log1p(np.clip(-self.delta - fnr, -1.0, 0.0)) - np.log(fpr)
        # log1p(-1) = -inf and log(0) = -inf give nan only when both are infinite
        first = np.where(np.isnan(first), -np.inf, first)
        second = np.where(np.isnan(second), -np.inf, second)
        return np.maximum(np.maximum(first, second), 0.0)

    def epsilon(self, theta: float) -> float:
        return float(theta)

    def region(self, alpha: NDArray[np.float64], theta: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        low = _eps_delta_curve(alpha, theta, self.delta)
        high = 1.0 - _eps_delta_curve(1.0 - alpha, theta, self.delta)
        return low, high

    # the one-run order-statistics null: δ of outputs give the bit away, the rest have |ℓ| = ε; leak ε
    leak_range = (1e-4, 60.0)

    def knots(self, leak: float, s_lo: float, s_hi: float, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        s = np.linspace(s_lo, s_hi, size)
        return s, np.maximum(s - self.delta, 0.0) / (1.0 + np.exp(leak))

    def positive_share(self, leak: float, s: float) -> float:
        return 0.5

    def parameter(self, leak: float) -> float:
        return leak

    def describe(self, leak: float) -> str:
        return f"({leak:.4g}, {self.delta:g})-DP"


#: The names :func:`null_family` builds (the CLI's ``--family``).
NULL_FAMILIES = ("gdp", "subsampled-gaussian", "dpsgd", "laplace", "generic")


def null_family(name: str, *, delta: float, sampling_prob: float = 1.0, num_steps: int = 1) -> object:
    """The null family called ``name`` at ``delta``: "generic" is (ε, δ)-DP; q and T serve the subsampled ones.

    >>> null_family("dpsgd", delta=1e-5, sampling_prob=0.01, num_steps=1000)
    DPSGD(sampling_prob=0.01, num_steps=1000, delta=1e-05, discretization=0.001, name='dpsgd', parameter_name='sigma', leak_range=(0.02, 10.0))
    """
    if name not in NULL_FAMILIES:
        raise ValueError(f"`family` must be one of {', '.join(NULL_FAMILIES)}, got {name!r}")
    if name == "gdp":
        return GaussianDP(delta)
    if name == "generic":
        return EpsilonDelta(delta)
    if name == "laplace":
        return LaplaceDP(delta)
    if name == "subsampled-gaussian":
        return SubsampledGaussianDP(sampling_prob, delta)
    return DPSGD(sampling_prob, num_steps, delta)


def check_null_request(family: str | None, claim: float | None, *, claim_required: bool) -> None:
    """Check a request for a null family by name (``family``) and its claimed parameter (``family_claim``), before any work.

    Every command that takes ``--family`` and ``--family-claim`` checks them
    here; its messages name the flags through the command's flag map.

    >>> check_null_request("gdp", 1.0, claim_required=True)
    >>> check_null_request("gdp", None, claim_required=True)
    Traceback (most recent call last):
    ...
    ValueError: `family_claim` must be given with `family` 'gdp': the family parameter the claim states (mu for gdp, sigma for subsampled-gaussian/dpsgd, epsilon for laplace/generic), in (0, inf)
    >>> check_null_request(None, 2.0, claim_required=False)
    Traceback (most recent call last):
    ...
    ValueError: `family_claim` needs `family`
    """
    if family is None:
        if claim is not None:
            raise ValueError("`family_claim` needs `family`")
        return
    check_choice(family, "family", NULL_FAMILIES)
    if claim is None:
        if claim_required:
            raise ValueError(
                f"`family_claim` must be given with `family` {family!r}: the family parameter the claim states "
                "(mu for gdp, sigma for subsampled-gaussian/dpsgd, epsilon for laplace/generic), in (0, inf)"
            )
        return
    if isinstance(claim, bool) or not isinstance(claim, (int, float)) or not (math.isfinite(claim) and claim > 0.0):
        raise ValueError(f"`family_claim` must be in (0, inf), got {claim!r}")
