"""One-shot estimation for the Gaussian mechanism (One-shot Algorithm 1, Table 2).

k canaries uniform on the unit sphere of R^d are summed and released with
noise: ρ = Σⱼ cⱼ + σ Z, Z ~ N(0, I_d). Each canary's cosine with ρ is the
observation; the statistical core turns the cosines into ε_est (an estimate)
and ε_lo (a lower bound), and checks the Gaussian fit.

Memory is bounded: canaries are regenerated from their seeds chunk by chunk
(:class:`privaudit.canaries.update.UpdateCanaries`), and the first pass keeps
as many chunks as ``memory_budget_bytes`` allows, so the second pass (the
cosines, which need the finished ρ) regenerates only the rest. With a budget
of at least 4·k·d bytes every canary is drawn once.

Readings of the paper:

* Algorithm 1 fits the canaries' variance σ̂². Table 2's spreads (0.148 at
  ε = 1) are those of the mean-shift estimate, the equal-variance reading that
  Theorem 3.3 justifies (d σ̂² → 1). Both are reported: ``estimate`` fits σ̂
  as written (at δ = 10⁻⁶ its sampling noise biases ε upwards, the safe
  direction for an estimate), ``estimate_equal_variance`` reproduces Table 2.
* The analytical ε is dp_accounting's pessimistic PLD of one Gaussian
  mechanism with sensitivity 1, i.e. the ε the noise was calibrated for.
* Table 2 sums canaries only (no data vectors), as Theorem 3.3 is stated.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..._core.results import Result
from ..._core.validation import check_positive, check_probability
from ...canaries.update import DEFAULT_MEMORY_BUDGET, UpdateCanaries
from ...stats.conversions import gaussian_epsilon
from ...stats.one_shot import CosineLowerBound, GaussianityCheck, OneShotEstimate, anderson_gaussianity, epsilon_lower_bound_cosines, epsilon_one_shot

__all__ = [
    "GaussianMechanismAudit",
    "audit_gaussian_mechanism",
    "gaussian_mechanism_cosines",
    "gaussian_mechanism_cosines_exact_law",
    "noise_rng",
]


def noise_rng(seed: int, stream: int) -> np.random.Generator:
    """A generator for purpose ``stream`` of a run, never equal to a canary's ``default_rng([seed, i])``.

    >>> bool(noise_rng(0, 1).standard_normal() != noise_rng(0, 2).standard_normal())
    True
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream,)))


def gaussian_mechanism_cosines(
    num_canaries: int, dimension: int, noise_multiplier: float, *, seed: int = 0, memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET
) -> np.ndarray:
    """Cosines of k random canaries with ρ = Σ cⱼ + σ Z (Algorithm 1, lines 2–8).

    Canaries come from ``UpdateCanaries(num_canaries, dimension, seed)``; the
    noise from a separate stream of ``seed``. At most ``memory_budget_bytes``
    of canary rows are held at once.

    >>> cosines = gaussian_mechanism_cosines(50, 10_000, 1.0, seed=0)
    >>> cosines.shape, bool(0.5 < cosines.mean() * np.sqrt(10_000) < 1.5)  # √d μ̂ → 1/σ (Thm 3.3)
    ((50,), True)
    >>> gaussian_mechanism_cosines(5, 100, 0.0)
    Traceback (most recent call last):
    ...
    ValueError: `noise_multiplier` must be > 0, got 0
    """
    canaries = UpdateCanaries(num_canaries, dimension, seed)
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    rows = canaries.rows_per_chunk(memory_budget_bytes)
    release = np.zeros(dimension, dtype=np.float64)
    kept, held = [], 0
    for indices, block in canaries.chunks(memory_budget_bytes=memory_budget_bytes):
        release += block.sum(axis=0, dtype=np.float64)
        next_bytes = min(rows, num_canaries - 1 - int(indices[-1])) * 4 * dimension
        if held + block.nbytes + next_bytes <= memory_budget_bytes:  # leave room for the chunk still to stream
            kept.append((indices, block))
            held += block.nbytes
    release += noise_multiplier * noise_rng(seed, 1).standard_normal(dimension)
    target = (release / np.linalg.norm(release)).astype(np.float32)
    cosines = np.empty(num_canaries, dtype=np.float64)
    done = np.zeros(num_canaries, dtype=bool)
    for indices, block in kept:
        cosines[indices] = block @ target
        done[indices] = True
    del kept
    rest = np.flatnonzero(~done)
    if rest.size:
        for indices, block in canaries.chunks(rest, memory_budget_bytes=memory_budget_bytes):
            cosines[indices] = block @ target
    return np.clip(cosines, -1.0, 1.0)


def gaussian_mechanism_cosines_exact_law(num_canaries: int, dimension: int, noise_multiplier: float, *, seed: int = 0) -> np.ndarray:
    """The same cosines as :func:`gaussian_mechanism_cosines`, drawn from their exact joint law.

    Every cosine is a function of the Gram matrix W of the k unnormalised
    canaries gᵢ ~ N(0, I_d) and the noise Z, and W ~ Wishart(d, I_{k+1}).
    scipy draws W by the Bartlett decomposition in O(k³), independent of d,
    so Table 2's 150 runs at d = 10⁶ take seconds. This is a simulation of
    the mechanism, not an audit of a release: use it to study the estimator.

    >>> exact = gaussian_mechanism_cosines_exact_law(200, 10**6, 1.0, seed=0)
    >>> exact.shape, bool(0.8 < exact.mean() * 10**3 < 1.2)  # √d μ̂ → 1/σ (Thm 3.3)
    ((200,), True)
    """
    from scipy import stats

    canaries = UpdateCanaries(num_canaries, dimension, seed)  # validates k and d
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    k = canaries.num_canaries
    gram = stats.wishart.rvs(df=dimension, scale=np.eye(k + 1), random_state=noise_rng(seed, 2))
    norms = np.sqrt(np.diag(gram)[:k])
    canary_gram = gram[:k, :k] / np.outer(norms, norms)  # cᵢ·cⱼ
    canary_noise = gram[:k, k] / norms  # cᵢ·Z
    dots = canary_gram.sum(axis=1) + noise_multiplier * canary_noise  # cᵢ·ρ
    squared_norm = canary_gram.sum() + 2.0 * noise_multiplier * canary_noise.sum() + noise_multiplier**2 * gram[k, k]
    return np.clip(dots / np.sqrt(squared_norm), -1.0, 1.0)


@dataclasses.dataclass(frozen=True)
class GaussianMechanismAudit(Result):
    """One run of Algorithm 1: the estimates, the lower bound, the fit's check and the analytical ε."""

    noise_multiplier: float
    num_canaries: int
    dimension: int
    delta: float
    seed: int
    analytical_epsilon: float
    estimate: OneShotEstimate
    estimate_equal_variance: OneShotEstimate
    lower_bound: CosineLowerBound
    gaussianity: GaussianityCheck
    threat_model: str = "final release observed (Gaussian mechanism, Algorithm 1)"
    null: str = "N(0, 1/d)"
    method: str = "vectors"


def audit_gaussian_mechanism(
    noise_multiplier: float,
    *,
    num_canaries: int = 1000,
    dimension: int = 10**6,
    delta: float = 1e-6,
    seed: int = 0,
    confidence: float = 0.95,
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET,
    method: str = "vectors",
) -> GaussianMechanismAudit:
    """Run Algorithm 1 once and estimate ε from the canary cosines (One-shot §3, Table 2).

    ``estimate`` fits σ̂ as Algorithm 1 is written; ``estimate_equal_variance``
    is Table 2's reading; ``lower_bound`` is ε_lo (Jeffreys, the paper's;
    approximate) at ``confidence``; ``gaussianity`` is the Anderson–Darling
    check of the cosines. ``method="vectors"`` runs the mechanism on canary
    vectors in chunks; ``"exact-law"`` draws the cosines from their exact law
    (:func:`gaussian_mechanism_cosines_exact_law`), for fast reproductions.

    >>> audit = audit_gaussian_mechanism(1.54, num_canaries=200, dimension=20_000, seed=0)
    >>> round(audit.analytical_epsilon, 1), bool(1.5 < audit.estimate_equal_variance.epsilon < 4.5)
    (3.0, True)
    >>> audit_gaussian_mechanism(1.0, num_canaries=10, dimension=10)
    Traceback (most recent call last):
    ...
    ValueError: `num_canaries` must be < `dimension` (10), got 10
    """
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    if method == "vectors":
        cosines = gaussian_mechanism_cosines(num_canaries, dimension, noise_multiplier, seed=seed, memory_budget_bytes=memory_budget_bytes)
    elif method == "exact-law":
        cosines = gaussian_mechanism_cosines_exact_law(num_canaries, dimension, noise_multiplier, seed=seed)
    else:
        raise ValueError(f"`method` must be 'vectors' or 'exact-law', got {method!r}")
    return GaussianMechanismAudit(
        noise_multiplier=float(noise_multiplier),
        num_canaries=int(num_canaries),
        dimension=int(dimension),
        delta=delta,
        seed=int(seed),
        analytical_epsilon=gaussian_epsilon(noise_multiplier, delta),
        estimate=epsilon_one_shot(cosines, dimension=dimension, delta=delta),
        estimate_equal_variance=epsilon_one_shot(cosines, dimension=dimension, delta=delta, equal_variance=True),
        lower_bound=epsilon_lower_bound_cosines(cosines, dimension=dimension, delta=delta, confidence=confidence),
        gaussianity=anderson_gaussianity(cosines),
        method=method,
    )
