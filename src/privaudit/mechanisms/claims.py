"""The privacy claim a mechanism is tested against: (ε, δ)-DP, or ρ-zCDP read at one δ.

A ρ-zCDP mechanism is (ρ + 2√(ρ log(1/δ)), δ)-DP for every δ > 0 (Bun and
Steinke 2016, Proposition 1.3). This conversion is not the tightest, so the
ε it gives is at least the mechanism's: rejecting it rejects the zCDP claim,
and a correct mechanism is rejected no more often than the confidence
allows (the safe direction).
"""

from __future__ import annotations

import dataclasses
import math

from .._core.validation import check_positive

__all__ = ["Claim", "zcdp_epsilon"]


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The ε at which ρ-zCDP implies (ε, δ)-DP: ρ + 2√(ρ log(1/δ)) (Bun and Steinke 2016, Prop. 1.3).

    >>> round(zcdp_epsilon(0.5, 1e-5), 4)
    5.2985
    """
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


@dataclasses.dataclass(frozen=True)
class Claim:
    """A privacy claim: ``epsilon`` (and ``delta``) for (ε, δ)-DP, or ``rho`` for ρ-zCDP tested at ``delta``.

    ``delta = 0`` with ``epsilon`` is pure ε-DP. ``tested_epsilon`` is the ε
    whose (ε, δ) the samples are tested against.

    >>> Claim(epsilon=1.0, delta=0.0).describe()
    '(1, 0)-DP'
    >>> round(Claim(rho=0.5, delta=1e-5).tested_epsilon, 4)
    5.2985
    >>> Claim(epsilon=0.0, delta=1e-5)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be > 0, got 0
    """

    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None

    def __post_init__(self) -> None:
        if (self.epsilon is None) == (self.rho is None):
            raise ValueError(f"give exactly one of `epsilon` and `rho`, got epsilon={self.epsilon!r} and rho={self.rho!r}")
        if self.epsilon is not None:
            check_positive(self.epsilon, "epsilon")
        if self.rho is not None:
            check_positive(self.rho, "rho")
        if not 0.0 <= float(self.delta) < 1.0:
            raise ValueError(f"`delta` must be in [0, 1), got {self.delta!r}")
        if self.rho is not None and self.delta == 0.0:
            raise ValueError("`delta` must be in (0, 1) with a `rho` claim (zCDP is tested as (epsilon, delta)-DP), got 0")

    @property
    def tested_epsilon(self) -> float:
        if self.rho is not None:
            return zcdp_epsilon(self.rho, self.delta)
        assert self.epsilon is not None
        return float(self.epsilon)

    @property
    def method(self) -> str:
        """The bound's family in :func:`privaudit.stats.bounds.epsilon_lower_bound`: pure DP at δ = 0, else (ε, δ)."""
        return "pure" if self.delta == 0.0 else "eps-delta"

    def describe(self) -> str:
        if self.rho is not None:
            return f"{self.rho:g}-zCDP (tested as ({self.tested_epsilon:.4g}, {self.delta:g})-DP)"
        return f"({self.epsilon:g}, {self.delta:g})-DP"
