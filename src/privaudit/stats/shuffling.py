"""A lower bound on ε(δ) of DP-SGD with shuffled fixed-size batches, by Monte Carlo on one pair of adjacent datasets.

Each epoch is a random permutation cut into S steps, so the audited record
is in exactly one step per epoch. Two pairs of adjacent datasets (add/remove,
sensitivity 1, noise σ per coordinate; after Annamalai, Balle, Hayes and De
Cristofaro, arXiv:2411.10614, and Chua et al., ICML 2024), on one coordinate:

* ``pair="opposed"`` (the default, the stronger): every other record's
  clipped gradient is −1 there and the audited record's +1, with S·b records
  in batches of b. With the record, its batch sums to −b + 2 and the others
  to −b; without it, one batch (b − 1 records, at a step no less random)
  sums to −b + 1. Relative to −b, P has a spike of 2 at one uniform step per
  epoch and Q a spike of 1: a record's presence moves the sum by 1 either way,
  but the position of the short batch gives it away. Poisson sampling hides
  this in its random batch sizes, which is why its dominating pair is the
  other one;
* ``pair="zero"``: every other record's gradient is 0; P has a spike of 1 at
  one uniform step per epoch, Q none.

With spikes m_P and m_Q, the privacy loss is

    L(x) = Σ_e [ log Σ_t exp((m_P x_{e,t} − m_P²/2)/σ²) − log Σ_t exp((m_Q x_{e,t} − m_Q²/2)/σ²) ],

and δ_{P‖Q}(ε) = E_P[(1 − e^{ε−L})_+], δ_{Q‖P}(ε) = E_Q[(1 − e^{ε+L})_+].
The pair's ε(δ), the smallest ε with both at most δ, is at most the
mechanism's: any pair gives a valid lower bound. The upper bound is E
Gaussian steps composed, μ = √E/σ (no amplification credited).

The bound, at confidence c, plain Monte Carlo with ``samples`` draws under P
and, independently, ``samples`` under Q:

* Bernoulli randomisation makes the count exact. Each integrand lies in
  [0, 1]; with V_i uniform, 1[V_i < 1 − e^{ε−L_i}] = 1[ε < L_i + log(1 − V_i)]
  is Bernoulli(δ_{P‖Q}(ε)). So the number k(ε) of effective losses
  L_i + log(1 − V_i) above ε is Binomial(n, δ(ε)), for every ε at once with
  the same V_i.
* A one-sided Clopper–Pearson lower bound at 1 − (1 − c)/2 per direction
  (Bonferroni over the two directions) certifies δ(ε) > δ once k(ε) ≥ k*,
  the fewest exceedances whose bound passes δ. The bound in that direction
  is the k*-th largest effective loss.
* No split over ε is needed: k(ε) falls as ε grows, so the bound passes the
  pair's true ε* only if k(ε*) ≥ k*, one fixed binomial event of
  probability at most (1 − c)/2. Hence P(ε(δ) ≥ ``epsilon``) ≥ c.

The P draws put the shifted step first in each epoch: L is symmetric in the
steps of an epoch, so its law is the same as for a uniform position. The
``estimate`` is the same count without the margin: the smallest ε with
k(ε)/n ≤ δ in both directions (unbiased counts; an estimate, not a bound).

>>> found = shuffled_epsilon_lower_bound(1.0, 1, 1, 1e-2, samples=20_000, pair="zero")  # one Gaussian step: ε(1e-2) = 2.32
>>> round(found.epsilon, 2), round(found.estimate, 2), found.kind
(2.3, 2.38, 'lower bound')
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._core.results import Result
from .._core.seeding import check_seed
from .._core.validation import check_count, check_noise_multiplier, check_probability
from .intervals import binomial_lower_bound

__all__ = ["PAIRS", "ShuffledEpsilonBound", "shuffled_epsilon_lower_bound"]

#: The spikes (m_P, m_Q) of each pair of the module docstring.
PAIRS = {"opposed": (2.0, 1.0), "zero": (1.0, 0.0)}

#: Floats drawn per chunk: memory stays near 8 × this many bytes whatever ``samples`` is.
_CHUNK_FLOATS = 2**21


@dataclasses.dataclass(frozen=True)
class ShuffledEpsilonBound(Result):
    """ε(δ) ≥ ``epsilon`` at ``confidence`` for DP-SGD with shuffled batches, from the pair of the module docstring.

    ``estimate``: the Monte Carlo point estimate of the pair's ε(δ).
    ``epsilon_add`` and ``epsilon_remove``: the bound of each direction,
    δ_{P‖Q} (the record added) and δ_{Q‖P} (removed), each at confidence
    1 − (1 − c)/2; ``epsilon`` is the larger, at least 0. ``needed``: the
    exceedances k* out of ``samples`` a direction needs to certify δ(ε) > δ
    (0 when ``samples`` is too few for any).
    """

    epsilon: float
    estimate: float
    delta: float
    confidence: float
    sigma: float
    steps_per_epoch: int
    epochs: int
    samples: int
    seed: int
    epsilon_add: float
    epsilon_remove: float
    needed: int
    pair: str = "opposed"
    method: str = "monte-carlo pair, Bernoulli-randomised Clopper-Pearson"
    kind: str = "lower bound"
    valid: bool = True


def _needed(samples: int, delta: float, level: float) -> int:
    """The fewest exceedances k with a Clopper–Pearson lower bound at ``level`` above ``delta``, or 0 if none of 0..samples has one."""
    if binomial_lower_bound(samples, samples, confidence=level) <= delta:
        return 0
    low, high = 0, samples  # bound(low) <= delta < bound(high)
    while high - low > 1:
        middle = (low + high) // 2
        if binomial_lower_bound(middle, samples, confidence=level) > delta:
            high = middle
        else:
            low = middle
    return high


def _log_spike_density(x: np.ndarray, spike: float, sigma: float) -> np.ndarray:
    """log Σ_t exp((m x_t − m²/2)/σ²) per epoch: S times the density, against no spike, of a spike m at a uniform step."""
    if spike == 0.0:
        return np.full(x.shape[:2], np.log(x.shape[2]))
    z = x * (spike / sigma**2)
    # logsumexp over the steps, in place: scipy.special.logsumexp computes the same, about 6 times slower here
    top = z.max(axis=2, keepdims=True)
    z -= top
    np.exp(z, out=z)
    return np.asarray(np.log(z.sum(axis=2)) + top[:, :, 0] - spike**2 / (2.0 * sigma**2))


def _losses(rng: np.random.Generator, size: int, sigma: float, steps: int, epochs: int, spikes: tuple[float, float], shifted: bool) -> np.ndarray:
    """L of ``size`` draws under P (``shifted``) or Q; the spike is put at each epoch's first step (L is symmetric in the steps)."""
    x = rng.standard_normal((size, epochs, steps)) * sigma
    x[:, :, 0] += spikes[0] if shifted else spikes[1]
    per_epoch = _log_spike_density(x, spikes[0], sigma) - _log_spike_density(x, spikes[1], sigma)
    return np.asarray(per_epoch.sum(axis=1))


def _largest(
    rng: np.random.Generator, samples: int, keep: int, sigma: float, steps: int, epochs: int, spikes: tuple[float, float], shifted: bool
) -> np.ndarray:
    """The ``keep`` largest effective losses ±L + log(1 − V), in decreasing order, drawn in chunks."""
    chunk = max(1, _CHUNK_FLOATS // (steps * epochs))
    top = np.empty(0)
    for start in range(0, samples, chunk):
        size = min(chunk, samples - start)
        loss = _losses(rng, size, sigma, steps, epochs, spikes, shifted)
        effective = (loss if shifted else -loss) + np.log1p(-rng.random(size))
        top = np.concatenate([top, effective])
        if top.size > keep:
            top = np.partition(top, top.size - keep)[top.size - keep :]
    return np.sort(top)[::-1]


def shuffled_epsilon_lower_bound(
    sigma: Any,
    steps_per_epoch: Any,
    epochs: Any,
    delta: Any,
    *,
    samples: Any = 1_000_000,
    confidence: Any = 0.95,
    seed: Any = 0,
    pair: str = "opposed",
) -> ShuffledEpsilonBound:
    """A lower bound on ε(δ) of E epochs of S shuffled steps at noise σ (sensitivity 1), at ``confidence``; the safe side is down.

    ``samples`` draws per direction, each E·S normals; the P and Q draws
    come from two child streams of ``seed``. With too few samples to
    certify any δ(ε) > δ the bound is 0. ``pair`` is one of :data:`PAIRS`.
    """
    if pair not in PAIRS:
        raise ValueError(f"`pair` must be one of {sorted(PAIRS)}, got {pair!r}")
    sigma = check_noise_multiplier(sigma, "sigma")
    steps = check_count(steps_per_epoch, "steps_per_epoch", minimum=1)
    epochs = check_count(epochs, "epochs", minimum=1)
    delta = check_probability(delta, "delta")
    samples = check_count(samples, "samples", minimum=1, maximum=10**10)
    confidence = check_probability(confidence, "confidence")
    seed = check_seed(seed)
    level = 1.0 - (1.0 - confidence) / 2.0  # Bonferroni over the two directions
    needed = _needed(samples, delta, level)
    point = int(np.floor(delta * samples)) + 1  # the smallest ε with k(ε) <= ⌊δn⌋ is the (⌊δn⌋+1)-th largest
    keep = min(samples, max(needed, point))
    bounds, estimates = [], []
    for stream, shifted in zip(np.random.SeedSequence(seed).spawn(2), (True, False), strict=True):
        top = _largest(np.random.default_rng(stream), samples, keep, sigma, steps, epochs, PAIRS[pair], shifted)
        bounds.append(float(top[needed - 1]) if needed else 0.0)
        estimates.append(float(top[point - 1]) if point <= samples else 0.0)
    add, remove = (max(0.0, value) for value in bounds)
    return ShuffledEpsilonBound(
        epsilon=max(add, remove),
        estimate=max(0.0, *estimates),
        delta=delta,
        confidence=confidence,
        sigma=sigma,
        steps_per_epoch=steps,
        epochs=epochs,
        samples=samples,
        seed=seed,
        epsilon_add=add,
        epsilon_remove=remove,
        needed=needed,
        pair=pair,
    )
