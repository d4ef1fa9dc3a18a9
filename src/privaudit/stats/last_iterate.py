"""The last-iterate heuristic of DP-SGD (Steinke et al. 2024, "The Last Iterate Advantage", arXiv:2410.06186).

Derivation (written down here, the model the heuristic assumes). Take a
linear loss, so every gradient is constant, and a canary whose clipped
gradient is the unit vector e along a direction no other example touches.
Each of T steps samples the canary with probability q (Poisson) and adds
N(0, σ²) noise per coordinate (clip norm 1), and the step is
θ ← θ - η (g + noise)/B. The final parameters along e, rescaled by -B/η
and minus their start, are

    Σ_t (b_t + z_t) = K + N(0, T σ²),   K ~ Binomial(T, q) with the canary, K = 0 without,

a function of the final model alone. The heuristic is ε(δ) of this pair,
P = Binomial(T, q) + N(0, Tσ²) against Q = N(0, Tσ²), both directions. With
q = 1 it is the Gaussian mechanism with μ = √T/σ, the same as the whole
transcript (Cebere, Bellet and Papernot 2025: hiding the iterates gives
nothing when the canary is in every step). With q < 1 it is far below the
composition bound: sampling's amplification does not compose. It is a
*heuristic*: real losses are not linear and Steinke et al. give
counterexamples that exceed it; it is never a bound, nor a claim.

In units of √T σ the pair is N(0, 1) against Σ_k w_k N(k a, 1), a = 1/(√T σ),
w the binomial weights, with privacy loss

    ℓ(x) = log Σ_k w_k exp(k a x - k² a²/2),

convex and increasing in x (a log-sum-exp of increasing lines), so each
level set of ℓ is one cut. Everything is computed in logs:
``special.log_ndtr`` tails, ``logsumexp`` over k; the cuts solve
g(x) = log(e^{ℓ(x) - log w_0} - 1) = y by Newton's method from the right
(g is convex with slope in [a, Ta], so Newton's iterates stay right of the
root and converge).

>>> heuristic = last_iterate_heuristic(1.0, sampling_prob=1.0, num_steps=4, delta=1e-5)
>>> from privaudit.stats.conversions import gdp_epsilon
>>> abs(heuristic.epsilon - gdp_epsilon(2.0, 1e-5)) < 1e-6, heuristic.kind  # q = 1: the Gaussian with μ = √T/σ
(True, 'heuristic')
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from .._core.results import Result
from .._core.validation import check_count, check_positive, check_probability, check_real
from .one_run_nulls import _thresholds, curve_knots

__all__ = ["LastIterateDP", "LastIterateHeuristic", "last_iterate_delta", "last_iterate_epsilon", "last_iterate_heuristic"]

_NEWTON_STEPS = 200
_NOTE = (
    "Steinke et al. (2024) last-iterate heuristic: epsilon of the final model along a canary direction under a linear loss, "
    "Binomial(T, q) + N(0, T sigma^2) against N(0, T sigma^2); a heuristic, not a bound and not a claim"
)


def _check_rate(value: Any) -> float:
    q = check_real(value, "sampling_prob")
    if not 0.0 < q <= 1.0:
        raise ValueError(f"`sampling_prob` must be in (0, 1], got {value!r}")
    return q


def _lse(terms: NDArray[np.float64]) -> NDArray[np.float64]:
    """log Σ exp along the last axis, each row with at least one finite entry (scipy's logsumexp costs 10× more here)."""
    top = np.max(terms, axis=-1)
    return np.asarray(top + np.log(np.sum(np.exp(terms - top[..., None]), axis=-1)), dtype=np.float64)


@functools.lru_cache(maxsize=256)
def _weights(q: float, steps: int) -> NDArray[np.float64]:
    """log Binomial(T, q) probabilities of k = 0..T (-inf where zero, e.g. every k < T at q = 1)."""
    k = np.arange(steps + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_choose = special.gammaln(steps + 1.0) - special.gammaln(k + 1.0) - special.gammaln(steps - k + 1.0)
        return np.asarray(log_choose + special.xlogy(k, q) + special.xlog1py(steps - k, -q), dtype=np.float64)


class _Pair:
    """The scaled pair at (q, T, a): out N(0, 1), in Σ_k w_k N(k a, 1)."""

    def __init__(self, q: float, steps: int, a: float):
        self.steps, self.a = steps, a
        self.log_w = _weights(q, steps)
        self.k = np.arange(steps + 1, dtype=np.float64)
        self.log_w0 = float(self.log_w[0])  # -inf at q = 1
        self.rest = self.log_w[1:] - self.log_w0 if math.isfinite(self.log_w0) else None  # log(w_k / w_0), k >= 1

    def loss(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """ℓ(x) = log d(in)/d(out)."""
        terms = self.log_w[None, :] + self.k[None, :] * self.a * x[:, None] - 0.5 * (self.k * self.a)[None, :] ** 2
        return _lse(terms)

    def cut(self, level: NDArray[np.float64]) -> NDArray[np.float64]:
        """The x with ℓ(x) = level (-inf where level <= inf ℓ = log w_0)."""
        level = np.asarray(level, dtype=np.float64)
        a, steps = self.a, self.steps
        if self.rest is None:  # q = 1: ℓ(x) = T a x - T² a²/2
            return (level + 0.5 * (steps * a) ** 2) / (steps * a)
        out = np.full(level.shape, -np.inf)
        ok = level > self.log_w0
        # solve g(x) = y, g(x) = log Σ_{k>=1} (w_k/w_0) e^{k a x - k² a²/2}: convex, slope in [a, T a]
        y = np.log(np.expm1(level[ok] - self.log_w0))
        k = self.k[1:]
        lines = (y[:, None] - self.rest[None, :] + 0.5 * (k * a)[None, :] ** 2) / (k * a)[None, :]  # g >= each line: right of the root
        x = np.min(lines, axis=1)
        for _ in range(_NEWTON_STEPS):
            terms = self.rest[None, :] + k[None, :] * a * x[:, None] - 0.5 * (k * a)[None, :] ** 2
            g = _lse(terms)
            slope = a * np.sum(k[None, :] * np.exp(terms - g[:, None]), axis=1)
            step = (g - y) / slope
            x = x - np.maximum(step, 0.0)  # from the right: never past the root
            if np.all(np.abs(step) <= 1e-13 * (1.0 + np.abs(x))):
                break
        out[ok] = x
        return out

    def log_in_above(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        """log P_in[X > t]."""
        return _lse(self.log_w[None, :] + special.log_ndtr(self.k[None, :] * self.a - t[:, None]))

    def log_in_below(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        """log P_in[X < t] (-inf at t = -inf)."""
        return _lse(self.log_w[None, :] + special.log_ndtr(t[:, None] - self.k[None, :] * self.a))

    def delta(self, epsilon: float) -> float:
        """δ(ε): the larger hockey-stick divergence of the two directions, each formed in logs."""
        upper = self.cut(np.array([epsilon]))
        lower = self.cut(np.array([-epsilon]))
        in_above, out_above = float(self.log_in_above(upper)[0]), float(special.log_ndtr(-upper[0]))
        remove = math.exp(in_above) * -math.expm1(min(0.0, epsilon + out_above - in_above))
        add = 0.0
        if math.isfinite(float(lower[0])):
            in_below, out_below = float(self.log_in_below(lower)[0]), float(special.log_ndtr(lower[0]))
            add = math.exp(out_below) * -math.expm1(min(0.0, epsilon + in_below - out_below))
        return max(remove, add, 0.0)

    def curve(self, c: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(s, E) at |ℓ| threshold c: the mixture mass with |ℓ| > c, and the Bayes guesser's error mass there."""
        upper, lower = self.cut(c), self.cut(-c)
        out_above = special.ndtr(-upper)
        in_above = np.exp(self.log_in_above(upper))
        out_below = special.ndtr(lower)
        in_below = np.where(np.isfinite(lower), np.exp(self.log_in_below(np.where(np.isfinite(lower), lower, 0.0))), 0.0)
        return 0.5 * (out_above + in_above + out_below + in_below), 0.5 * (out_above + in_below)

    def above_share(self, c: float) -> float:
        upper = self.cut(np.array([c]))
        return float(0.5 * (special.ndtr(-upper[0]) + math.exp(float(self.log_in_above(upper)[0]))))


@functools.lru_cache(maxsize=256)
def _pair(q: float, steps: int, sigma: float) -> _Pair:
    return _Pair(q, steps, 1.0 / (math.sqrt(steps) * sigma))


def _check(sigma: Any, q: Any, steps: Any) -> tuple[float, float, int]:
    return check_positive(sigma, "noise_multiplier"), _check_rate(q), check_count(steps, "num_steps", minimum=1)


def last_iterate_delta(noise_multiplier: Any, *, sampling_prob: Any, num_steps: Any, epsilon: Any) -> float:
    """δ(ε) of the last-iterate pair, the larger of the two directions.

    >>> from privaudit.stats.conversions import gdp_delta
    >>> abs(last_iterate_delta(2.0, sampling_prob=1.0, num_steps=9, epsilon=1.0) - gdp_delta(1.0, 1.5)) < 1e-12
    True
    """
    sigma, q, steps = _check(noise_multiplier, sampling_prob, num_steps)
    value = check_real(epsilon, "epsilon")
    if value < 0.0:
        raise ValueError(f"`epsilon` must be >= 0, got {epsilon!r}")
    return _pair(q, steps, sigma).delta(value)


def _epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """The exact ε(δ) of the pair (unrounded): the root of δ(ε) = δ; 0 where δ(0) <= δ."""
    pair = _pair(q, steps, sigma)
    if pair.delta(0.0) <= delta:
        return 0.0
    high = 1.0
    while pair.delta(high) > delta:
        high *= 2.0
        if high > 1e4:
            return math.inf
    return float(optimize.brentq(lambda e: pair.delta(e) - delta, 0.0, high, xtol=1e-13, rtol=1e-13))


def last_iterate_epsilon(noise_multiplier: Any, *, sampling_prob: Any, num_steps: Any, delta: Any) -> float:
    """The heuristic's ε at ``delta``, rounded up (the target a final-model bound is read against is never understated).

    >>> from privaudit.stats.conversions import gaussian_epsilon
    >>> round(last_iterate_epsilon(1.0, sampling_prob=0.01, num_steps=1000, delta=1e-6), 2), round(gaussian_epsilon(1.0, 1e-6, sampling_prob=0.01, num_steps=1000), 2)
    (1.47, 2.12)
    """
    sigma, q, steps = _check(noise_multiplier, sampling_prob, num_steps)
    return _epsilon(sigma, q, steps, check_probability(delta, "delta")) * (1.0 + 1e-9) + 1e-12


@dataclasses.dataclass(frozen=True)
class LastIterateHeuristic(Result):
    """Steinke et al.'s last-iterate heuristic for one DP-SGD setting: a heuristic, never a bound or a claim.

    ``epsilon`` is ε(δ) of Binomial(T, q) + N(0, Tσ²) against N(0, Tσ²),
    rounded up; ``what`` says what it is.
    """

    epsilon: float
    delta: float
    noise_multiplier: float
    sampling_prob: float
    num_steps: int
    kind: str = "heuristic"
    what: str = _NOTE


def last_iterate_heuristic(noise_multiplier: Any, *, sampling_prob: Any, num_steps: Any, delta: Any) -> LastIterateHeuristic:
    """The last-iterate heuristic for DP-SGD at noise σ, Poisson rate q, T steps (clip norm 1).

    >>> h = last_iterate_heuristic(0.8, sampling_prob=0.05, num_steps=100, delta=1e-5)
    >>> h.kind, 0.0 < h.epsilon < 4.0
    ('heuristic', True)
    """
    sigma, q, steps = _check(noise_multiplier, sampling_prob, num_steps)
    delta = check_probability(delta, "delta")
    return LastIterateHeuristic(last_iterate_epsilon(sigma, sampling_prob=q, num_steps=steps, delta=delta), delta, sigma, q, steps)


@dataclasses.dataclass(frozen=True)
class LastIterateDP:
    """The last-iterate pair as an order-statistics null (:mod:`privaudit.stats.one_run_nulls`): leak 1/σ.

    Out N(0, Tσ²), in Binomial(T, q) + N(0, Tσ²). A test against it refutes
    the *heuristic* (the final model along a Dirac canary leaking no more
    than the linear model predicts), not DP-SGD: ε is that of the pair,
    rounded down.

    >>> from privaudit.stats.families import GaussianDP
    >>> s, e = LastIterateDP(1.0, 4, 1e-5).knots(0.5, 0.1, 1.0, 8)  # q = 1: μ = √T/σ = 1
    >>> s2, e2 = GaussianDP(1e-5).knots(1.0, 0.1, 1.0, 8)
    >>> bool(np.allclose(np.interp(s2, s, e), e2, atol=2e-3))
    True
    """

    sampling_prob: float
    num_steps: int
    delta: float
    name: str = "last-iterate"
    parameter_name: str = "sigma"
    leak_range: tuple[float, float] = (0.02, 10.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sampling_prob", _check_rate(self.sampling_prob))
        object.__setattr__(self, "num_steps", check_count(self.num_steps, "num_steps", minimum=1))
        object.__setattr__(self, "delta", check_probability(self.delta, "delta"))

    def _pair(self, leak: float) -> _Pair:
        return _pair(self.sampling_prob, self.num_steps, 1.0 / leak)

    def knots(self, leak: float, s_lo: float, s_hi: float, size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return curve_knots(self._pair(leak).curve, s_lo, s_hi, size)

    def positive_share(self, leak: float, s: float) -> float:
        """Share of the top-s outputs whose Bayes guess is "in"."""
        pair = self._pair(leak)
        c = _thresholds(pair.curve, s, s)[1]
        return float(min(1.0, pair.above_share(c) / s))

    def epsilon(self, leak: float) -> float:
        return max(0.0, _epsilon(1.0 / leak, self.sampling_prob, self.num_steps, self.delta) * (1.0 - 1e-9))

    def parameter(self, leak: float) -> float:
        return 1.0 / leak

    def describe(self, leak: float) -> str:
        return f"the last-iterate heuristic's pair with sigma >= {1.0 / leak:.4g}, q = {self.sampling_prob:g}, T = {self.num_steps}"
