"""The nulls of the order-statistics one-run test: a claim's own privacy loss pair.

Each null is a pair of output distributions (A: canary in, B: canary out)
indexed by one *leak* parameter that grows as the mechanism grows less
private. The one-run game flips a fair coin per canary, and the Bayes
guesser of the pair errs on an output with probability 1/(1 + e^|ℓ|), ℓ
the privacy loss log dA/dB. Rank the outputs by |ℓ|; the test only needs

    E(s) = P[the guess is wrong and the output is among the top-s mass of |ℓ|],

under the mixture (A + B)/2, for s in a window. E is convex with E(0) = 0,
so E(s)/s, the mean error rate of the top s, never decreases in s.

``knots(leak, s_lo, s_hi, size)`` returns points (s, E(s)) on the curve,
ascending in s and covering [s_lo, s_hi]; E may only err low (a lower E is a
less private null, which is harder to reject). Families:

* :class:`~privaudit.stats.families.GaussianDP`: μ-GDP, leak μ;
* :class:`~privaudit.stats.families.EpsilonDelta`: (ε, δ)-DP, leak ε, its
  four-atom pair (δ of outputs that give the bit away, the rest at ±ε);
* :class:`LaplaceDP`: Laplace(0, 1) against Laplace(ε, 1), leak ε;
* :class:`SubsampledGaussianDP`: B = N(0, 1), A = (1 - q) N(0, 1) + q N(1/σ, 1),
  one step, leak 1/σ;
* :class:`DPSGD`: that step composed T times, from dp_accounting's
  pessimistic PLD (its losses rounded up: a less private pair), leak 1/σ.

>>> null = LaplaceDP(delta=1e-5)
>>> s, errors = null.knots(1.0, 0.2, 1.0, 5)
>>> bool(abs(errors[-1] - 0.5 * np.exp(-0.5)) < 1e-12)  # Laplace's Bayes error e^{-ε/2}/2
True
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._core.validation import check_count, check_probability, check_real

__all__ = ["DPSGD", "LaplaceDP", "SubsampledGaussianDP", "curve_knots"]

Curve = Callable[[NDArray[np.float64]], tuple[NDArray[np.float64], NDArray[np.float64]]]


def _tail(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Φ̄(x) = P[N(0, 1) > x], accurate in the upper tail."""
    return np.asarray(special.ndtr(-x), dtype=np.float64)


def _thresholds(curve: Curve, s_lo: float, s_hi: float) -> tuple[float, float]:
    """Thresholds a_low <= a_high on |ℓ| with s(a_low) >= s_hi and s(a_high) <= s_lo, a little outside the window.

    Two rounds of a 257-point grid (s decreases in a): never a root finder
    call per point, and the ends are on the safe side of the window.
    """
    top = 1.0
    while float(curve(np.array([top]))[0][0]) > s_lo and top < 1e6:
        top *= 2.0
    low, high = 0.0, top
    for _ in range(2):
        grid = np.linspace(low, high, 257)
        s = curve(grid)[0]
        start = max(0, int(np.searchsorted(-s, -s_hi, side="left")) - 1)  # last point with s >= s_hi
        stop = min(grid.size - 1, int(np.searchsorted(-s, -s_lo, side="left")))  # first point with s <= s_lo
        low, high = float(grid[start]), float(grid[stop])
    return low, high


def curve_knots(curve: Curve, s_lo: float, s_hi: float, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Exact points of a continuous null's (s, E) curve, given as a function of the |ℓ| threshold a.

    ``curve(a)`` returns (s(a), E(a)) with s decreasing in a from s(0) = 1.
    The knots are equally spaced in a between the thresholds of ``s_hi`` and
    ``s_lo`` (never inverting s numerically, so every E is exact).

    >>> def gdp(a):  # μ = 1
    ...     return _tail(a + 0.5) + _tail(a - 0.5), _tail(a + 0.5)
    >>> s, errors = curve_knots(gdp, 0.1, 1.0, 50)
    >>> bool(s[0] <= 0.1 and s[-1] == 1.0 and np.all(np.diff(s) > 0))
    True
    """
    a_low, a_high = _thresholds(curve, s_lo, s_hi)
    grid = np.linspace(a_high, a_low, size)  # descending a: ascending s
    s, errors = curve(grid)
    return np.asarray(s, dtype=np.float64), np.asarray(errors, dtype=np.float64)


def _check_delta(delta: float) -> float:
    value = check_real(delta, "delta")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"`delta` must be in [0, 1), got {delta!r}")
    return value


def _round_down(epsilon: float) -> float:
    return max(0.0, epsilon * (1.0 - 1e-9))


@dataclasses.dataclass(frozen=True)
class LaplaceDP:
    """Laplace noise of scale 1 on a query of sensitivity ε: pure ε-DP, leak ε.

    ε(δ) = ε + 2 log(1 - δ): its hockey-stick divergence is 1 - e^{-(ε - ε')/2}.

    >>> round(LaplaceDP(delta=1e-5).epsilon(2.0), 6)
    1.99998
    """

    delta: float = 0.0
    name: str = "laplace"
    parameter_name: str = "epsilon"
    leak_range: tuple[float, float] = (1e-4, 60.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", _check_delta(self.delta))

    def knots(self, leak: float, s_lo: float, s_hi: float, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        s = np.linspace(s_lo, s_hi, size)
        atom = 0.5 * (1.0 + math.exp(-leak))  # the outputs where |ℓ| = ε: beyond both means
        y = -(1.0 - s) + np.sqrt((1.0 - s) ** 2 + math.exp(-leak))  # e^{-c} of the threshold c between the means
        errors = np.where(s <= atom, s / (1.0 + math.exp(leak)), 0.5 * y)
        return s, errors

    def positive_share(self, leak: float, s: float) -> float:
        return 0.5

    def epsilon(self, leak: float) -> float:
        return _round_down(leak + 2.0 * math.log1p(-self.delta))

    def parameter(self, leak: float) -> float:
        return leak

    def describe(self, leak: float) -> str:
        return f"Laplace noise with epsilon <= {leak:.4g}"


@dataclasses.dataclass(frozen=True)
class SubsampledGaussianDP:
    """One Poisson-subsampled Gaussian step: sampling probability q, noise multiplier σ; leak 1/σ.

    ε(δ) is exact: the larger hockey-stick divergence of the two directions,
    in closed form, solved for ε and rounded down.

    >>> null = SubsampledGaussianDP(sampling_prob=0.2, delta=1e-5)
    >>> round(null.epsilon(2.0), 3)  # σ = 0.5 (Xiang et al.'s "SGM mu=2 q=0.2")
    7.62
    """

    sampling_prob: float
    delta: float
    name: str = "subsampled-gaussian"
    parameter_name: str = "sigma"
    leak_range: tuple[float, float] = (1e-3, 20.0)

    def __post_init__(self) -> None:
        q = check_real(self.sampling_prob, "sampling_prob")
        if not 0.0 < q <= 1.0:
            raise ValueError(f"`sampling_prob` must be in (0, 1], got {self.sampling_prob!r}")
        object.__setattr__(self, "sampling_prob", q)
        object.__setattr__(self, "delta", check_probability(self.delta, "delta"))

    def _cuts(self, leak: float, a: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The x beyond which ℓ > a, and below which ℓ < -a (-inf where ℓ never gets there)."""
        q, mu = self.sampling_prob, leak
        with np.errstate(divide="ignore", invalid="ignore"):
            upper = (a + np.log1p((q - 1.0) * np.exp(-a)) - math.log(q) + 0.5 * mu * mu) / mu
            inner = np.exp(-a) - (1.0 - q)
            lower = np.where(inner > 0.0, (np.log(np.maximum(inner, 1e-300)) - math.log(q) + 0.5 * mu * mu) / mu, -np.inf)
        return upper, lower

    def _curve(self, leak: float) -> Curve:
        q, mu = self.sampling_prob, leak

        def curve(a: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
            upper, lower = self._cuts(leak, a)
            out_above, in_above = _tail(upper), (1.0 - q) * _tail(upper) + q * _tail(upper - mu)
            out_below, in_below = _tail(-lower), (1.0 - q) * _tail(-lower) + q * _tail(mu - lower)
            return 0.5 * (out_above + in_above + out_below + in_below), 0.5 * (out_above + in_below)

        return curve

    def knots(self, leak: float, s_lo: float, s_hi: float, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return curve_knots(self._curve(leak), s_lo, s_hi, size)

    def positive_share(self, leak: float, s: float) -> float:
        """Share of the top-s outputs whose Bayes guess is "in"."""
        a = np.array([_thresholds(self._curve(leak), s, s)[1]])
        upper, _ = self._cuts(leak, a)
        above = 0.5 * ((2.0 - self.sampling_prob) * _tail(upper) + self.sampling_prob * _tail(upper - leak))
        return float(min(1.0, above[0] / s))

    def _deltas(self, leak: float, epsilon: float) -> float:
        """δ(ε), the larger of the two directions; e^ε times a tail formed in logs so that neither overflows."""
        q, mu = self.sampling_prob, leak
        upper, lower = (float(cut[0]) for cut in self._cuts(leak, np.array([epsilon])))

        def scaled(x: float) -> float:  # e^ε Φ̄(x)
            return math.exp(min(700.0, epsilon + float(special.log_ndtr(-x))))

        remove = (1.0 - q) * float(_tail(np.array([upper]))[0]) + q * float(_tail(np.array([upper - mu]))[0]) - scaled(upper)
        add = float(_tail(np.array([-lower]))[0]) - (1.0 - q) * scaled(-lower) - q * scaled(mu - lower) if math.isfinite(lower) else 0.0
        return max(remove, add, 0.0)

    def epsilon(self, leak: float) -> float:
        if self._deltas(leak, 0.0) <= self.delta:
            return 0.0
        from scipy import optimize  # here: importing privaudit.stats.families stays light

        high = 1.0
        while self._deltas(leak, high) > self.delta:
            high *= 2.0
        return _round_down(float(optimize.brentq(lambda e: self._deltas(leak, e) - self.delta, 0.0, high, xtol=1e-12)))

    def parameter(self, leak: float) -> float:
        return 1.0 / leak

    def describe(self, leak: float) -> str:
        return f"a subsampled Gaussian with sigma >= {1.0 / leak:.4g}, q = {self.sampling_prob:g}"


@functools.lru_cache(maxsize=256)
def _dpsgd_curve(sigma: float, q: float, steps: int, discretization: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(s, E, in-guess mass) at every atom of the composed pessimistic PLD, sorted by |ℓ| from the top."""
    from .gaussian_pld import subsampled_gaussian_pld

    pmf = subsampled_gaussian_pld(sigma, q, steps, pessimistic=True, discretization=discretization)._pmf_remove
    in_mass = np.clip(np.asarray(pmf._probs, dtype=np.float64), 0.0, None)  # the canary-in distribution, ℓ = log din/dout
    losses = (pmf._lower_loss + np.arange(in_mass.size)) * pmf._discretization
    out_mass = in_mass * np.exp(-losses)
    # outputs that give the bit away: ℓ = +inf (dp_accounting's infinity mass) and the out side's unmatched mass (ℓ = -inf)
    certain = float(pmf._infinity_mass) + max(0.0, 1.0 - float(out_mass.sum()))
    order = np.argsort(-np.abs(losses), kind="stable")
    mass = np.r_[0.5 * certain, 0.5 * (in_mass + out_mass)[order]]
    error = np.r_[0.0, 0.5 * np.minimum(in_mass, out_mass)[order]]
    positive = np.r_[0.5 * float(pmf._infinity_mass), np.where(losses[order] > 0.0, 0.5 * (in_mass + out_mass)[order], 0.0)]
    return np.r_[0.0, np.cumsum(mass)], np.r_[0.0, np.cumsum(error)], np.r_[0.0, np.cumsum(positive)]


@dataclasses.dataclass(frozen=True)
class DPSGD:
    """DP-SGD: T Poisson-subsampled Gaussian steps (sampling probability q), noise multiplier σ; leak 1/σ.

    The pair comes from dp_accounting's pessimistic PLD (grid ``discretization``),
    ε(δ) from its optimistic one, rounded down.

    >>> null = DPSGD(sampling_prob=0.5, num_steps=4, delta=1e-5)
    >>> 0 < null.epsilon(1.0) < SubsampledGaussianDP(0.5, 1e-5).epsilon(2.0)  # 4 steps at σ = 1 vs one at σ = 0.5
    True
    """

    sampling_prob: float
    num_steps: int
    delta: float
    discretization: float = 1e-3
    name: str = "dpsgd"
    parameter_name: str = "sigma"
    leak_range: tuple[float, float] = (0.02, 10.0)

    def __post_init__(self) -> None:
        q = check_real(self.sampling_prob, "sampling_prob")
        if not 0.0 < q <= 1.0:
            raise ValueError(f"`sampling_prob` must be in (0, 1], got {self.sampling_prob!r}")
        object.__setattr__(self, "sampling_prob", q)
        object.__setattr__(self, "num_steps", check_count(self.num_steps, "num_steps", minimum=1))
        object.__setattr__(self, "delta", check_probability(self.delta, "delta"))

    def knots(self, leak: float, s_lo: float, s_hi: float, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        s_all, e_all, _ = _dpsgd_curve(1.0 / leak, self.sampling_prob, self.num_steps, self.discretization)
        s = np.linspace(s_lo, s_hi, size)
        return s, np.interp(s, s_all, e_all)  # exact: within an atom the error rate is constant

    def positive_share(self, leak: float, s: float) -> float:
        s_all, _, positive = _dpsgd_curve(1.0 / leak, self.sampling_prob, self.num_steps, self.discretization)
        return float(min(1.0, np.interp(s, s_all, positive) / s))

    def epsilon(self, leak: float) -> float:
        from .gaussian_pld import epsilon_for_delta, subsampled_gaussian_pld

        pld = subsampled_gaussian_pld(1.0 / leak, self.sampling_prob, self.num_steps, pessimistic=False, discretization=self.discretization)
        return _round_down(float(epsilon_for_delta(pld, self.delta)))

    def parameter(self, leak: float) -> float:
        return 1.0 / leak

    def describe(self, leak: float) -> str:
        return f"DP-SGD with sigma >= {1.0 / leak:.4g}, q = {self.sampling_prob:g}, T = {self.num_steps}"
