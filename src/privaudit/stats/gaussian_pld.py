"""Privacy-loss distributions (PLDs) of the Poisson-subsampled Gaussian mechanism, built with numpy.

dp_accounting's ``from_gaussian_mechanism`` inverts the privacy loss one grid
point at a time in Python, and its ``get_delta_for_epsilon`` walks the
distribution in a Python loop; for a search over the noise multiplier that
runs a hundred times, those loops are most of the time. This module builds
the same two single-step distributions with array operations:

* pessimistic: connect-the-dots (Doroshenko et al. 2022, Algorithm 1) on the
  grid of ε values, as ``pessimistic_estimate=True, use_connect_dots=True``;
* optimistic: privacy buckets with every loss rounded down, as
  ``pessimistic_estimate=False, use_connect_dots=False``;

composes them by dp_accounting's truncated FFT (its Chernoff truncation
bounds for all orders at once), and reads δ(ε) for many ε, and ε(δ), off the
result with cumulative sums instead of its loops. The CDFs, truncation points
and losses are dp_accounting's own (its ``GaussianPrivacyLoss``); only the
inverse privacy loss is computed here, by the same formulas.
``tests/test_gaussian_pld.py`` checks every piece against dp_accounting: the
distributions bit for bit, δ(ε) and ε(δ) to 10⁻¹⁰ (dp_accounting steps its
loss grid by repeated addition, we multiply).

>>> pessimistic = subsampled_gaussian_pld(1.0, 0.01, 100, pessimistic=True, discretization=1e-3)
>>> optimistic = subsampled_gaussian_pld(1.0, 0.01, 100, pessimistic=False, discretization=1e-4)
>>> round(epsilon_for_delta(optimistic, 1e-5), 3), round(epsilon_for_delta(pessimistic, 1e-5), 3)  # the true ε(δ) lies between
(0.713, 0.718)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .conversions import MAX_PLD_POINTS, _check_pld_size, _compose, pld_grid_points

__all__ = ["deltas_for_epsilons", "epsilon_for_delta", "subsampled_gaussian_pld"]

_COARSEST = 1e-2  # as conversions._gaussian_pld: a coarser grid moves ε by too much to report
_SQUARING_FROM = 4096  # as conversions._compose: more steps compose by repeated squaring


def _loss_model(noise_multiplier: float, sampling_prob: float, adjacency: str, pessimistic: bool) -> Any:
    from dp_accounting.pld import privacy_loss_mechanism as mechanisms

    kind = mechanisms.AdjacencyType.ADD if adjacency == "add" else mechanisms.AdjacencyType.REMOVE
    return mechanisms.GaussianPrivacyLoss(noise_multiplier, sensitivity=1.0, pessimistic_estimate=pessimistic, sampling_prob=sampling_prob, adjacency_type=kind)


def _inverse_losses(model: Any, adjacency: str, losses: NDArray[np.float64]) -> NDArray[np.float64]:
    """Largest x whose privacy loss is at least each loss (dp_accounting's ``inverse_privacy_loss``, vectorised).

    Without subsampling the inverse is x = -1/2 - ℓσ² (remove) and 1/2 + ℓσ²
    shifted (add); subsampling maps ℓ to log(1 + (e^{±ℓ} - 1)/q) first,
    computed as dp_accounting's ``log_a_times_exp_b_plus_c`` does.
    """
    q, variance = model.sampling_prob, model._standard_deviation**2
    signed = losses if adjacency == "remove" else -losses
    if q == 1.0:
        unsampled = signed
    else:
        a, c = 1.0 / q, 1.0 - 1.0 / q
        d = signed + math.log(a)
        with np.errstate(divide="ignore", invalid="ignore"):  # at the loss bound log(1 - q) the inverse is ±inf
            unsampled = np.where(signed == 0.0, math.log(a + c), d + np.log1p(-np.exp(math.log(-c) - d)))
    if adjacency == "add":
        unsampled = -unsampled
    inverse = -0.5 - unsampled * variance
    return np.asarray(inverse + 1.0 if adjacency == "add" else inverse, dtype=np.float64)


def _mechanism_deltas(model: Any, adjacency: str, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
    """δ(ε) of one step, exactly (dp_accounting's ``get_delta_for_epsilon``, vectorised)."""
    q = model.sampling_prob
    deltas = np.zeros_like(epsilons)
    if q == 1.0:
        inside = np.ones(epsilons.shape, dtype=bool)
    elif adjacency == "add":
        inside = epsilons < -math.log1p(-q)  # beyond it δ is 0
    else:
        inside = epsilons > math.log1p(-q)
        deltas[~inside] = -np.expm1(epsilons[~inside])
    cutoffs = _inverse_losses(model, adjacency, epsilons[inside])
    with np.errstate(invalid="ignore"):
        deltas[inside] = model.mu_upper_cdf(cutoffs) - np.exp(epsilons[inside] + model.mu_lower_log_cdf(cutoffs))
    return np.asarray(np.clip(np.nan_to_num(deltas, nan=0.0), 0.0, 1.0))


def _dense_pmf(discretization: float, lower_loss: int, probs: NDArray[np.float64], infinity_mass: float, pessimistic: bool) -> Any:
    from dp_accounting.pld import pld_pmf

    return pld_pmf.DensePLDPmf(discretization, int(lower_loss), probs, float(infinity_mass), pessimistic)


def _connect_the_dots(model: Any, adjacency: str, discretization: float) -> Any:
    """Pessimistic single-step PMF: Algorithm 1 of Connect the Dots on every grid ε between the loss bounds."""
    bounds = model.connect_dots_bounds()
    upper = math.ceil(bounds.epsilon_upper / discretization)
    lower = math.floor(bounds.epsilon_lower / discretization)
    deltas = np.minimum.accumulate(_mechanism_deltas(model, adjacency, np.arange(lower, upper + 1) * discretization))
    if upper == lower:
        return _dense_pmf(discretization, lower, np.array([1.0 - deltas[0]]), deltas[0], True)
    gaps = np.diff(deltas)
    probs = np.empty_like(deltas)
    probs[0] = 1.0 - deltas[0] + gaps[0] / math.expm1(discretization)
    probs[1:-1] = (gaps[1:] - gaps[:-1] * math.exp(discretization)) / math.expm1(discretization)
    probs[-1] = gaps[-1] / math.expm1(-discretization)
    return _dense_pmf(discretization, lower, np.maximum(0.0, probs), deltas[-1], True)


def _privacy_buckets_rounded_down(model: Any, adjacency: str, discretization: float) -> Any:
    """Optimistic single-step PMF: the mass between the x's where the loss crosses each grid value, rounded down."""
    tail = model.privacy_loss_tail()
    lower_x, upper_x = tail.lower_x_truncation, tail.upper_x_truncation
    top = math.floor(model.privacy_loss(lower_x) / discretization)
    bottom_loss = model.privacy_loss(upper_x)
    values = np.arange(top, math.floor(bottom_loss / discretization) - 2, -1)
    last = int(np.argmax(discretization * values <= bottom_loss))  # the first grid value at or below the loss at upper_x
    values = values[: last + 1]
    inner = _inverse_losses(model, adjacency, discretization * values[:-1].astype(np.float64))
    beyond = np.flatnonzero(inner >= upper_x)  # dp_accounting's loop stops at the first x past upper_x
    if beyond.size:
        values, inner = values[: beyond[0] + 1], inner[: beyond[0] + 1]
        xs = np.concatenate([[lower_x], inner])
    else:
        xs = np.concatenate([[lower_x], inner, [upper_x]])
    mass = np.diff(model.mu_upper_cdf(xs))
    probs = mass[::-1].copy()  # values run downwards; the dense PMF runs upwards from values[-1]
    infinity_mass = 0.0
    for loss, tail_mass in tail.tail_probability_mass_function.items():
        if loss == math.inf:
            infinity_mass += tail_mass
            continue
        index = math.floor(loss / discretization) - int(values[-1])
        if index >= probs.size:
            probs = np.concatenate([probs, np.zeros(index - probs.size + 1)])
        probs[index] += tail_mass
    return _dense_pmf(discretization, int(values[-1]), probs, infinity_mass, False)


def subsampled_gaussian_pld(noise_multiplier: float, sampling_prob: float, num_steps: int, *, pessimistic: bool, discretization: float) -> Any:
    """The composed PLD of ``num_steps`` Poisson-subsampled Gaussian steps (sensitivity 1), as dp_accounting builds it.

    A PLD that would need more than ``MAX_PLD_POINTS`` grid points is built on
    a coarser grid, which keeps either estimate on its side (pessimistic
    rounds losses up, optimistic down), up to a step of 0.01; beyond that it
    is refused, as in :func:`~privaudit.gaussian_epsilon`.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    while discretization < _COARSEST and pld_grid_points(noise_multiplier, sampling_prob, num_steps, discretization, pessimistic) > MAX_PLD_POINTS:
        discretization = min(2.0 * discretization, _COARSEST)
    _check_pld_size(noise_multiplier, sampling_prob, num_steps, discretization, pessimistic)
    build = _connect_the_dots if pessimistic else _privacy_buckets_rounded_down
    pmfs = [build(_loss_model(noise_multiplier, sampling_prob, side, pessimistic), side, discretization) for side in ("remove", "add")]
    if num_steps == 1 or num_steps > _SQUARING_FROM:
        return _compose(PrivacyLossDistribution(*pmfs), num_steps)
    return PrivacyLossDistribution(*[_self_compose(pmf, num_steps) for pmf in pmfs])


def _self_compose(pmf: Any, num_steps: int, tail_mass_truncation: float = 1e-15) -> Any:
    """dp_accounting's ``DensePLDPmf.self_compose``, with its Chernoff truncation bounds for all 40 orders in one array operation."""
    from scipy import fft

    probs = np.asarray(pmf._probs, dtype=np.float64)
    size = probs.size
    lower, upper = 0, (size - 1) * num_steps
    # log E[e^{k i/size}] for k = ±1..±20: powers of e^{±i/size}, each term within e^±20, so no shift is needed
    ramp = np.exp(np.arange(size) / size)
    for sign, step in ((1, ramp), (-1, 1.0 / ramp)):
        terms = probs.copy()
        for k in range(1, 21):
            terms *= step
            with np.errstate(divide="ignore", invalid="ignore"):
                bound = (num_steps * math.log(terms.sum()) + math.log(2.0 / tail_mass_truncation)) / (sign * k / size) if terms.sum() > 0 else math.nan
            if math.isfinite(bound):  # the Chernoff bound of each order, as dp_accounting applies it
                upper, lower = (min(upper, math.ceil(bound)), lower) if sign > 0 else (upper, max(lower, math.floor(bound)))
    length = upper - lower + 1
    transformed = fft.fft(probs, fft.next_fast_len(max(length, size)))
    composed = np.roll(np.real(fft.ifft(transformed**num_steps)), -lower)[:length]
    infinity_mass = tail_mass_truncation - math.expm1(num_steps * math.log1p(-pmf._infinity_mass))
    return _dense_pmf(pmf._discretization, pmf._lower_loss * num_steps + lower, composed, infinity_mass, pmf._pessimistic_estimate)


def _pmf_deltas(pmf: Any, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
    """δ(ε) = P∞ + Σ_{ℓ > ε} p_ℓ (1 - e^{ε - ℓ}), summed from the top as dp_accounting does."""
    dense = pmf.to_dense_pmf()
    probs = np.asarray(dense._probs, dtype=np.float64)
    losses = (np.arange(probs.size) + dense._lower_loss) * dense._discretization
    upper = np.cumsum(np.concatenate([[dense._infinity_mass], probs[::-1]]))[::-1]  # upper[i]: P∞ + mass of losses[i:]
    lower = np.concatenate([np.cumsum(_other_side_masses(probs[::-1], losses[::-1]))[::-1], [0.0]])
    first_above = np.searchsorted(losses, epsilons, side="right")
    with np.errstate(over="ignore", invalid="ignore"):
        deltas = upper[first_above] - np.exp(epsilons) * lower[first_above]
    # cancellation may leave a δ a rounding error outside [0, 1]
    return np.asarray(np.clip(np.where(np.isposinf(epsilons), dense._infinity_mass, deltas), 0.0, 1.0), dtype=np.float64)


def _other_side_masses(probs: NDArray[np.float64], losses: NDArray[np.float64]) -> NDArray[np.float64]:
    """p e^-ℓ as sign(p) exp(log|p| - ℓ), within [-1, 1]: the other side's mass is a probability.

    FFT leaves noise of about 1e-16 in every p, also where the true p is below
    e^ℓ; at a very negative loss that noise times e^-ℓ would overflow. Only
    those noise terms exceed 1 in size, and only sums over losses below the ε
    asked for include them.

    >>> _other_side_masses(np.array([5e-16, -1e-18, 0.25]), np.array([-802.0, -900.0, 0.0])).tolist()
    [1.0, -1.0, 0.25]
    """
    with np.errstate(divide="ignore", over="ignore"):
        return np.asarray(np.clip(np.sign(probs) * np.exp(np.log(np.abs(probs)) - losses), -1.0, 1.0))


def deltas_for_epsilons(pld: Any, epsilons: Any) -> NDArray[np.float64]:
    """δ(ε) of a dp_accounting PLD at many ε at once: the larger of its remove and add distributions.

    >>> pld = subsampled_gaussian_pld(1.0, 0.01, 100, pessimistic=True, discretization=1e-2)
    >>> bool(np.allclose(deltas_for_epsilons(pld, [0.5, 1.0]), pld.get_delta_for_epsilon([0.5, 1.0]), rtol=1e-9, atol=1e-15))
    True
    """
    epsilons = np.asarray(epsilons, dtype=np.float64)
    deltas = _pmf_deltas(pld._pmf_remove, epsilons)
    if not pld._symmetric:
        deltas = np.maximum(deltas, _pmf_deltas(pld._pmf_add, epsilons))
    return np.asarray(deltas)


def _pmf_epsilon(pmf: Any, delta: float) -> float:
    """Smallest ε with δ(ε) <= ``delta``: dp_accounting's walk down the losses, with every step's masses at once."""
    dense = pmf.to_dense_pmf()
    infinity_mass = float(dense._infinity_mass)
    if infinity_mass > delta:
        return math.inf
    probs = np.asarray(dense._probs, dtype=np.float64)[::-1]
    losses = (dense._lower_loss + probs.size - 1 - np.arange(probs.size)) * dense._discretization  # descending
    upper = np.cumsum(np.concatenate([[infinity_mass], probs]))  # upper[k]: mass above the k-th loss, before it is added
    lower = np.cumsum(np.concatenate([[0.0], _other_side_masses(probs, losses)]))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        candidate = np.log((upper - delta) / lower)
    stops = (upper[:-1] > delta) & (lower[:-1] > 0) & (candidate[:-1] >= losses)
    zeros = (upper[1:] >= delta) & (lower[1:] == 0)  # losses so large that e^-loss is 0: ε is that loss
    stop = int(np.argmax(stops)) if stops.any() else probs.size
    zero = int(np.argmax(zeros)) if zeros.any() else probs.size
    if zero < stop:
        return max(0.0, float(losses[zero]))
    if upper[stop] <= lower[stop] + delta:
        return 0.0
    return float(candidate[stop])


def epsilon_for_delta(pld: Any, delta: float) -> float:
    """ε(δ) of a dp_accounting PLD, as its ``get_epsilon_for_delta`` computes it, without the Python loop.

    >>> pld = subsampled_gaussian_pld(1.0, 0.01, 100, pessimistic=False, discretization=1e-3)
    >>> abs(epsilon_for_delta(pld, 1e-5) - pld.get_epsilon_for_delta(1e-5)) < 1e-9
    True
    """
    epsilon = _pmf_epsilon(pld._pmf_remove, delta)
    return epsilon if pld._symmetric else max(epsilon, _pmf_epsilon(pld._pmf_add, delta))
