"""Reference mechanisms with switchable bugs, each correct version ε-DP (or (ε, δ)-DP) by a textbook proof.

Every maker takes ``bug`` and returns ``fn(dataset, size, rng)``, vectorised.
:data:`REFERENCES` pairs each with the datasets it is tested on and its claim:

* ``laplace``: a clamped sum with Laplace noise; the bug halves the scale (true ε = 2ε);
* ``data-sensitivity-mean``: a mean with Laplace noise; the bug takes the
  sensitivity from the data's range instead of the public bounds (Nissim,
  Raskhodnikova and Smith 2007: local sensitivity is not private);
* ``noisy-max``: report noisy max of counts; the bug scales the noise for
  sensitivity 1/k (k candidates) instead of 1;
* ``svt-no-query-noise`` and ``svt-no-cutoff``: the sparse vector technique
  (Lyu, Su and Li 2017, Algorithm 1, c = 1) against two of the non-private
  variants they list: no noise on the queries, and no stop after the first
  positive answer. The queries are non-monotone (Ding et al. 2018's
  counterexample): the target record moves the first half of the answers down
  by one and the second half up by one (10 queries; 100 without the cutoff,
  whose leak, about ε/4 per query, shows only over many);
* ``gaussian-mean``: a mean with Gaussian noise calibrated by privaudit's
  PLD accountant; the bug divides the noise by n twice;
* ``clamped-count``: a count where each record contributes at most 1; the
  bug forgets the clamp.

Beyond :data:`REFERENCES`, for the tightness benchmark and the search tests:
``replace_histogram`` (a 10-bin Laplace histogram whose noise is calibrated
for add/remove, claimed under replace-one: true ε = 2ε), ``clipped_mean``
(a replace-one mean whose bug forgets the lower clip) and ``em_median``
(the exponential mechanism's median without its /2), with
:func:`em_median_probabilities` for exact enumeration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from privaudit.stats.conversions import gaussian_noise_multiplier

EPSILON = 1.0
GAUSSIAN_DELTA = 1e-5


def laplace(bug: bool) -> Callable:
    scale = (0.5 if bug else 1.0) / EPSILON

    def mechanism(dataset, size, rng):
        return np.clip(dataset, 0.0, 1.0).sum() + rng.laplace(0.0, scale, size)

    return mechanism


def data_sensitivity_mean(bug: bool) -> Callable:
    def mechanism(dataset, size, rng):
        clamped = np.clip(dataset, 0.0, 1.0)
        n = clamped.size  # public under replace-one
        sensitivity = (clamped.max() - clamped.min()) / n if bug else 1.0 / n
        return clamped.mean() + rng.laplace(0.0, sensitivity / EPSILON, size)

    return mechanism


NUM_CANDIDATES = 8


def noisy_max(bug: bool) -> Callable:
    scale = 2.0 / EPSILON / (NUM_CANDIDATES if bug else 1)

    def mechanism(dataset, size, rng):
        counts = np.bincount(dataset.astype(np.int64), minlength=NUM_CANDIDATES)[:NUM_CANDIDATES]
        return np.argmax(counts + rng.laplace(0.0, scale, (size, NUM_CANDIDATES)), axis=1).astype(np.float64)

    return mechanism


SVT_THRESHOLD = 0.5


def sparse_vector(variant: str | None) -> Callable:
    """Lyu, Su and Li (2017) Algorithm 1 with c = 1 and ε₁ = ε₂ = ε/2, or a non-private ``variant``.

    The dataset's records are vectors in [-1, 1]^m; query i is the sum of the
    records' i-th entries (sensitivity 1, non-monotone). The output holds 1
    for ⊤, 0 for ⊥ and -1 for queries left unanswered after the stop.
    """

    def mechanism(dataset, size, rng):
        answers = np.clip(dataset, -1.0, 1.0).sum(axis=0)
        m = answers.size
        rho = rng.laplace(0.0, 1.0 / (EPSILON / 2), (size, 1))  # Δ/ε₁
        nu = np.zeros((size, m)) if variant == "no-query-noise" else rng.laplace(0.0, 2.0 / (EPSILON / 2), (size, m))  # 2cΔ/ε₂
        above = (answers + nu >= SVT_THRESHOLD + rho).astype(np.float64)
        if variant == "no-cutoff":
            return above
        first = np.where(above.any(axis=1), above.argmax(axis=1), m)
        index = np.arange(m)
        return np.where(index < first[:, None], 0.0, np.where(index == first[:, None], 1.0, -1.0))

    return mechanism


def gaussian_mean(bug: bool) -> Callable:
    multiplier = gaussian_noise_multiplier(EPSILON, GAUSSIAN_DELTA)

    def mechanism(dataset, size, rng):
        clamped = np.clip(dataset, 0.0, 1.0)
        n = clamped.size
        sigma = multiplier / n  # sensitivity 1/n under replace-one
        if bug:
            sigma /= n
        return clamped.mean() + rng.normal(0.0, sigma, size)

    return mechanism


def clamped_count(bug: bool) -> Callable:
    def mechanism(dataset, size, rng):
        contributions = dataset if bug else np.clip(dataset, 0.0, 1.0)
        return contributions.sum() + rng.laplace(0.0, 1.0 / EPSILON, size)

    return mechanism


HISTOGRAM_BINS = 10


def replace_histogram(bug: bool) -> Callable:
    """Counts of the records (bin indices) in ``HISTOGRAM_BINS`` bins plus Laplace noise: scale 2/ε is ε-DP under replace-one; the bug uses 1/ε."""
    scale = (1.0 if bug else 2.0) / EPSILON

    def mechanism(dataset, size, rng):
        bins = np.clip(np.round(dataset), 0, HISTOGRAM_BINS - 1).astype(np.int64)
        return np.bincount(bins, minlength=HISTOGRAM_BINS) + rng.laplace(0.0, scale, (size, HISTOGRAM_BINS))

    mechanism.neighbouring = "replace"
    return mechanism


def clipped_mean(bug: bool) -> Callable:
    """The mean of records clipped to [0, 1] plus Laplace noise of scale 1/(nε): ε-DP under replace-one; the bug clips only from above."""

    def mechanism(dataset, size, rng):
        data = np.minimum(dataset, 1.0) if bug else np.clip(dataset, 0.0, 1.0)
        return data.mean() + rng.laplace(0.0, 1.0 / (data.size * EPSILON), size)

    mechanism.neighbouring = "replace"
    return mechanism


MEDIAN_CANDIDATES = 10


def em_median_probabilities(dataset: np.ndarray, bug: bool) -> np.ndarray:
    """The exponential mechanism's output probabilities over the candidates 0..9 for the median.

    Utility u(r) = -|#{x <= r} - #{x > r}|, of sensitivity 1 under add/remove:
    exp(ε u / 2) is ε-DP; the bug uses exp(ε u).
    """
    data = np.clip(np.round(np.asarray(dataset, dtype=np.float64)), 0, MEDIAN_CANDIDATES - 1)
    below = (data[None, :] <= np.arange(MEDIAN_CANDIDATES)[:, None]).sum(axis=1)
    utility = -np.abs(2 * below - data.size)
    logits = EPSILON * utility / (1.0 if bug else 2.0)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def em_median(bug: bool) -> Callable:
    def mechanism(dataset, size, rng):
        return rng.choice(MEDIAN_CANDIDATES, size=size, p=em_median_probabilities(dataset, bug)).astype(np.float64)

    mechanism.neighbouring = "add-remove"
    return mechanism


@dataclasses.dataclass(frozen=True)
class Reference:
    """A reference mechanism's maker, the pair it is tested on, and its claim."""

    make: Callable[[Any], Callable]
    dataset: np.ndarray
    neighbour: np.ndarray
    claim: dict
    buggy: Any = True  # what `make` takes for the buggy version
    correct: Any = False


_SVT_D = np.array([[1.0] * 5 + [0.0] * 5])
_SVT_TARGET = np.array([[-1.0] * 5 + [1.0] * 5])
# without the cutoff every query leaks a little (about ε/4 each): the leak shows over 100 queries
_SVT_LONG_D = np.array([[1.0] * 50 + [0.0] * 50])
_SVT_LONG_TARGET = np.array([[-1.0] * 50 + [1.0] * 50])
_UNIT = np.linspace(0.0, 1.0, 10)

REFERENCES: dict[str, Reference] = {
    "laplace": Reference(laplace, _UNIT, np.append(_UNIT, 1.0), {"epsilon": EPSILON}),
    "data-sensitivity-mean": Reference(data_sensitivity_mean, np.linspace(0.4, 0.6, 10), np.append(np.linspace(0.4, 0.6, 10)[:-1], 1.0), {"epsilon": EPSILON}),
    "noisy-max": Reference(noisy_max, np.arange(NUM_CANDIDATES), np.append(np.arange(NUM_CANDIDATES), 0), {"epsilon": EPSILON}),
    "svt-no-query-noise": Reference(sparse_vector, _SVT_D, np.concatenate([_SVT_D, _SVT_TARGET]), {"epsilon": EPSILON}, "no-query-noise", None),
    "svt-no-cutoff": Reference(sparse_vector, _SVT_LONG_D, np.concatenate([_SVT_LONG_D, _SVT_LONG_TARGET]), {"epsilon": EPSILON}, "no-cutoff", None),
    "gaussian-mean": Reference(gaussian_mean, _UNIT, np.append(_UNIT[:-1], 0.0), {"epsilon": EPSILON, "delta": GAUSSIAN_DELTA}),
    "clamped-count": Reference(clamped_count, np.ones(10), np.append(np.ones(10), 5.0), {"epsilon": EPSILON}),
}


NUM_CATEGORIES = 4
SYNTHETIC_ROWS = 20


def synthetic_histogram(bug: bool) -> Callable:
    """Synthetic tables of ``SYNTHETIC_ROWS`` rows drawn from a Laplace-noised histogram of the records (post-processing: ε-DP).

    The bug draws the rows from the histogram without noise.
    """

    def mechanism(dataset, size, rng):
        counts = np.bincount(dataset.astype(np.int64), minlength=NUM_CATEGORIES)[:NUM_CATEGORIES].astype(np.float64)
        noisy = counts + (0.0 if bug else rng.laplace(0.0, 1.0 / EPSILON, (size, NUM_CATEGORIES)))
        weights = np.clip(np.broadcast_to(noisy, (size, NUM_CATEGORIES)), 1e-9, None)
        cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
        uniform = rng.random((size, SYNTHETIC_ROWS, 1))
        rows = (uniform > cumulative[:, None, :-1]).sum(axis=2)
        return rows[:, :, None].astype(np.float64)

    return mechanism


# --- mechanisms for the command-line tests, imported as mechanisms_reference:NAME ---

CALLS: list[int] = []  # the sizes every call of `counted` asked for


def cli_laplace(dataset, size, rng):
    CALLS.append(size)
    return np.clip(dataset, 0.0, 1.0).sum() + rng.laplace(0.0, 1.0 / EPSILON, size)


cli_laplace.neighbouring = "add-remove"
cli_laplace.claim = {"epsilon": EPSILON, "delta": 0.0}


def cli_laplace_half(dataset, size, rng):
    return np.clip(dataset, 0.0, 1.0).sum() + rng.laplace(0.0, 0.5 / EPSILON, size)


def wrong_shape(dataset, size, rng):
    CALLS.append(size)
    return rng.laplace(0.0, 1.0, size + 1)


def returns_nan(dataset, size, rng):
    CALLS.append(size)
    return np.full(size, np.nan)
