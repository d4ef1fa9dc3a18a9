"""Canary exposure (Secret Sharer §4) and what it says about ε (Jagielski's note).

Exposure takes *losses* (log-perplexities): a lower loss means the model finds
the sequence more likely, so more memorised. It is the one place in the core
where "lower is more member-like".

* ``exposure``: exposure among n sampled references, log2 n - log2 rank, with
  rank = 1 + #{references with loss <= the canary's}. Ties count against the
  canary (a tie raises its rank), so exposure is never overstated. Exposure
  lies in [log2 n - log2(n + 1), log2 n].
* ``exact_exposure``: over the whole enumerated randomness space R, which
  contains the canary: log2 |R| - log2 rank, rank = #{r in R: loss(r) <= loss(canary)}.
* ``exposure_extrapolated``: -log2 F(loss) for a skew-normal F fitted to the
  references (Secret Sharer §4.3), computed in the log domain.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import cast

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, special, stats

from .._core.results import Result
from .._core.validation import as_scores, check_count, check_fraction, check_probability
from .intervals import _lower, _upper

__all__ = [
    "ExposureResult",
    "ExtrapolatedExposure",
    "EpsilonFromExposure",
    "RandomGuessingExposure",
    "epsilon_from_exposure",
    "exact_exposure",
    "exposure",
    "exposure_extrapolated",
    "random_guessing_exposure",
]

_LN2 = np.log(2.0)


@dataclasses.dataclass(frozen=True)
class ExposureResult(Result):
    """Exposure (bits) and rank of each canary; ``num_references`` is n (or |R|)."""

    exposures: np.ndarray
    ranks: np.ndarray
    num_references: int
    method: str


def _ranks(canary_losses: np.ndarray, reference_losses: np.ndarray) -> np.ndarray:
    """#{references with loss <= canary loss}, for every canary, in O((n + m) log n)."""
    return np.searchsorted(np.sort(reference_losses), canary_losses, side="right")


def exposure(canary_losses: ArrayLike, reference_losses: ArrayLike) -> ExposureResult:
    """Exposure of each canary among sampled references: log2 n - log2(1 + #refs with loss <= canary's).

    >>> result = exposure([0.5, 2.0], [1.0, 2.0, 3.0, 4.0])
    >>> result.ranks.tolist(), result.exposures.round(3).tolist()  # ranks 1 and 1 + 2 (tie counts against)
    ([1, 3], [2.0, 0.415])
    """
    canaries = as_scores(canary_losses, "canary_losses")
    references = as_scores(reference_losses, "reference_losses")
    ranks = 1 + _ranks(canaries, references)
    exposures = np.log2(references.size) - np.log2(ranks)
    return ExposureResult(exposures=exposures, ranks=ranks, num_references=references.size, method="sampled")


def exact_exposure(canary_losses: ArrayLike, candidate_losses: ArrayLike) -> ExposureResult:
    """Exposure over the whole randomness space: log2 |R| - log2 rank (Secret Sharer Def. 3).

    ``candidate_losses`` holds the loss of every candidate in R, the inserted
    canaries included; a canary's rank counts the candidates with loss <= its
    own, itself included.

    >>> exact_exposure([1.0], [3.0, 1.0, 2.0, 4.0]).exposures.tolist()  # rank 1 of |R| = 4
    [2.0]
    """
    canaries = as_scores(canary_losses, "canary_losses")
    candidates = as_scores(candidate_losses, "candidate_losses")
    ranks = _ranks(canaries, candidates)
    if np.any(ranks < 1):
        raise ValueError(
            "`candidate_losses` must contain every canary's loss (R includes the canary), "
            f"but {int(np.sum(ranks < 1))} canary loss(es) lie below all candidates"
        )
    exposures = np.log2(candidates.size) - np.log2(ranks)
    return ExposureResult(exposures=exposures, ranks=ranks, num_references=candidates.size, method="exact")


@dataclasses.dataclass(frozen=True)
class ExtrapolatedExposure(Result):
    """Skew-normal extrapolated exposure (an estimate) with the fit and its goodness of fit.

    ``ks_pvalue`` is optimistic: the parameters were fitted on the same references.
    """

    exposures: np.ndarray
    shape: float
    loc: float
    scale: float
    ks_statistic: float
    ks_pvalue: float
    num_references: int
    method: str = "extrapolated"
    kind: str = "estimate"


_FAR = 1e4  # h'(z) beyond 1e4 √(1 + a₊²): the endpoint expansion is exact to ~1e-8 in log F
_DEEPEST = 1e150  # |z| is clipped here (towards the bulk: a smaller exposure), so z² stays finite


def _endpoint_slope(z: np.ndarray, shape: float) -> np.ndarray:
    """h'(z) = -z + a λ(a z) for h(t) = log 2 + log φ(t) + log Φ(a t), λ(x) = φ(x)/Φ(x)."""
    az = shape * z
    with np.errstate(under="ignore", over="ignore"):
        exact = np.exp(-0.5 * np.minimum(az * az, 1e4) - 0.5 * np.log(2 * np.pi) - special.log_ndtr(np.maximum(az, -30.0)))
        # λ(x) = -x + 1/(-x) + O(|x|⁻³) for x < -30; exact (no cancellation) above
        mills = np.where(az < -30.0, -az - 1.0 / np.minimum(az, -30.0), exact)
        return -z + shape * mills


def _use_endpoint(z: np.ndarray, shape: float) -> np.ndarray:
    """Where Laplace's endpoint expansion is exact to ~1e-8: |h''|/h'² <= (1 + a₊²)/h'² <= 1e-8."""
    with np.errstate(over="ignore", invalid="ignore"):
        return cast("np.ndarray", (z < -1.0) & (_endpoint_slope(np.minimum(z, -1.0), shape) >= _FAR * np.sqrt(1.0 + max(shape, 0.0) ** 2)))


def _skewnorm_logcdf_far(z: np.ndarray, shape: float) -> np.ndarray:
    """log F(z) far in the left tail: Laplace's expansion at the endpoint of F(z) = ∫_{-∞}^z e^{h(t)} dt.

    F(z) = e^{h(z)}/h'(z) (1 + O(h''/h'²)) with h'(z) = -z + a λ(a z) >= |z| and
    |h''| <= 1 + a₊²; it is used where that ratio is below 1e-8.
    """
    return cast("np.ndarray", np.log(2.0) - 0.5 * z * z - 0.5 * np.log(2 * np.pi) + special.log_ndtr(shape * z) - np.log(_endpoint_slope(z, shape)))


def _skewnorm_logcdf_tail(z: float, shape: float) -> float:
    """log F(z) for the standard skew-normal in the left tail, where scipy underflows.

    F(z) = 2 ∫_{-∞}^{z} φ(t) Φ(a t) dt; with t = z - u the integrand is
    factored by its value at u = 0, so the remaining integral is O(1). The
    normal part of the ratio is exp(z u - u²/2), written without the
    cancellation of t² - z².
    """
    log_tail_z = special.log_ndtr(shape * z)

    def ratio(v: float) -> float:
        u = v / rate
        return cast(float, np.exp(z * u - 0.5 * u * u + special.log_ndtr(shape * (z - u)) - log_tail_z))

    peak = -0.5 * z * z - 0.5 * np.log(2 * np.pi) + log_tail_z
    # the integrand decays like exp(-rate · u); integrate in v = rate · u so the mass sits at v ~ 1
    rate = abs(z) * (1.0 + max(shape, 0.0) ** 2) + 1.0
    value, _ = integrate.quad(ratio, 0.0, np.inf, limit=200)
    return float(np.log(2.0) + peak + np.log(value / rate))


def skewnorm_logcdf(x: ArrayLike, shape: float, loc: float, scale: float) -> np.ndarray:
    """log CDF of a skew-normal, finite wherever the density is positive.

    Far in the left tail (from z = (x - loc)/scale of about -1e4, earlier
    for a large shape a) it uses the endpoint expansion of :func:`_skewnorm_logcdf_far`; z is clipped at
    -1e150/max(1, |a|), which only lowers the exposure.

    >>> bool(np.isfinite(skewnorm_logcdf(-100.0, 3.0, 0.0, 1.0)))
    True
    >>> float(skewnorm_logcdf(-1e10, 0.0, 0.0, 1.0))  # log Φ(-1e10) = -5e19 - log(1e10 √(2π))
    -5e+19
    """
    with np.errstate(over="ignore", invalid="ignore"):  # x - loc may overflow to ±inf: clipped below
        deepest = _DEEPEST / max(1.0, abs(shape))  # so (a z)² stays finite too
        z = np.clip((np.asarray(x, dtype=np.float64) - loc) / scale, -deepest, deepest)
    z = np.nan_to_num(z, nan=0.0)  # inf - inf cannot arise from finite x; kept safe
    with np.errstate(divide="ignore", under="ignore"):
        out = np.asarray(stats.skewnorm.logcdf(z, shape), dtype=np.float64)
    far = _use_endpoint(z, shape)
    deep = (~np.isfinite(out) | (out < -600.0)) & ~far  # near or past float underflow
    if np.any(far) or np.any(deep):
        out = np.array(out, dtype=np.float64, copy=True, ndmin=1)
        z1 = np.atleast_1d(z)
        far1, deep1 = np.atleast_1d(far), np.atleast_1d(deep)
        out[far1] = _skewnorm_logcdf_far(z1[far1], shape)
        out[deep1] = [_skewnorm_logcdf_tail(value, shape) for value in z1[deep1]]
        out = out.reshape(np.shape(z))
    return out


def exposure_extrapolated(canary_losses: ArrayLike, reference_losses: ArrayLike) -> ExtrapolatedExposure:
    """Exposure -log2 F(loss) under a skew-normal F fitted to the reference losses (Secret Sharer §4.3).

    It estimates the exposure the canary would have among a randomness space
    far larger than the references. The tail is computed in logs, so a
    canary far below every reference gets a large finite exposure.

    >>> rng = np.random.default_rng(0)
    >>> result = exposure_extrapolated([-4.0], rng.normal(0, 1, 20_000))
    >>> bool(14.0 < result.exposures[0] < 16.0)  # -log2 Φ(-4) = 14.9, up to the fit's error
    True
    """
    canaries = as_scores(canary_losses, "canary_losses")
    references = as_scores(reference_losses, "reference_losses", min_size=3)
    with np.errstate(over="ignore"):
        spread = float(np.ptp(references))
    if spread == 0:
        raise ValueError("`reference_losses` must not all be equal: a skew-normal cannot be fitted")
    if not np.isfinite(spread):
        raise ValueError(f"`reference_losses` must span less than {np.finfo(float).max:.3g}, got max - min = inf")
    # fit on standardised references: scipy's optimiser fails on values near 1e±300
    center = float(np.median(references))
    standard = (references - center) / spread
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the optimiser's trial steps; the KS statistic reports the fit
        shape, loc, scale = stats.skewnorm.fit(standard)
    ks = stats.kstest(standard, "skewnorm", args=(shape, loc, scale))
    loc, scale = center + spread * loc, spread * scale
    exposures = -skewnorm_logcdf(canaries, shape, loc, scale) / _LN2
    return ExtrapolatedExposure(
        exposures=exposures,
        shape=float(shape),
        loc=float(loc),
        scale=float(scale),
        ks_statistic=float(ks.statistic),
        ks_pvalue=float(ks.pvalue),
        num_references=references.size,
    )


@dataclasses.dataclass(frozen=True)
class RandomGuessingExposure(Result):
    """Exposure of a canary the model has not memorised, among n references (exact, finite n)."""

    num_references: int
    mean: float
    median: float
    quantile_75: float


def _guessing_quantile(n: int, q: float) -> float:
    # rank R is uniform on {1, ..., n + 1}; exposure log2 n - log2 R decreases in R, so
    # P(exposure <= log2 n - log2 r) = (n + 2 - r)/(n + 1); the lower q-quantile takes
    # the largest r with that probability >= q.
    r = np.floor(n + 2 - q * (n + 1) + 1e-9)
    return float(np.log2(n) - np.log2(r))


def random_guessing_exposure(num_references: int) -> RandomGuessingExposure:
    """Mean, median and 75th percentile of exposure when the canary's rank is uniform.

    A canary the model treats like any reference has rank uniform on
    {1, ..., n + 1}. The mean is log2 n - log2((n + 1)!)/(n + 1), which tends
    to 1/ln 2 ≈ 1.44; quantiles are lower quantiles of this discrete law
    (numpy's "inverted_cdf") and tend to 1 (median) and 2 (75th percentile),
    as Jagielski's note says.

    >>> baseline = random_guessing_exposure(10**6)
    >>> round(baseline.mean, 3), round(baseline.median, 3), round(baseline.quantile_75, 3)
    (1.443, 1.0, 2.0)
    """
    n = check_count(num_references, "num_references", minimum=1)
    mean = np.log2(n) - special.gammaln(n + 2) / ((n + 1) * _LN2)
    return RandomGuessingExposure(num_references=n, mean=float(mean), median=_guessing_quantile(n, 0.5), quantile_75=_guessing_quantile(n, 0.75))


@dataclasses.dataclass(frozen=True)
class EpsilonFromExposure(Result):
    """ε-DP lower bound from canary and reference losses (Jagielski's note), with its ingredients."""

    epsilon: float
    epsilon_estimate: float
    threshold: float
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    true_positives: int
    false_positives: int
    num_canaries: int
    num_references: int
    quantile: float
    confidence: float
    duplicates: int
    valid: bool = True
    kind: str = "lower bound"


def epsilon_from_exposure(
    canary_losses: ArrayLike, reference_losses: ArrayLike, *, quantile: float = 0.5, confidence: float = 0.95, duplicates: int = 1
) -> EpsilonFromExposure:
    """Lower-bound pure ε from canary exposures (Jagielski's note, with sampling error).

    The attack calls a sequence "in" when its loss is <= t, where t is the
    k-th smallest canary loss, k = max(1, ceil(quantile × m)). Then
    ε >= ln(TPR/FPR) / duplicates; at the median this is ln 2 (exposure - 1).

    Sampling error: a Clopper–Pearson lower bound on the TPR (from k of m)
    and upper bound on the FPR (references with loss <= t), each at one-sided
    level 1 - (1 - confidence)/2. Choosing t from the canaries keeps this
    valid: F(X_(k)) ~ Beta(k, m - k + 1) for the k-th order statistic, which
    the Clopper–Pearson bound at k successes inverts exactly, and the
    references are independent of t. ``duplicates`` applies group privacy: a
    canary inserted k times bounds kε.

    >>> rng = np.random.default_rng(0)
    >>> result = epsilon_from_exposure(rng.normal(-3, 1, 1000), rng.normal(0, 1, 100_000))
    >>> result.kind, bool(0 < result.epsilon < result.epsilon_estimate)
    ('lower bound', True)
    """
    canaries = as_scores(canary_losses, "canary_losses")
    references = as_scores(reference_losses, "reference_losses")
    quantile = check_fraction(quantile, "quantile")
    confidence = check_probability(confidence, "confidence")
    duplicates = check_count(duplicates, "duplicates", minimum=1)

    m, n = canaries.size, references.size
    k = max(1, int(np.ceil(quantile * m)))
    threshold = float(np.partition(canaries, k - 1)[k - 1])
    true_positives = int(np.count_nonzero(canaries <= threshold))
    false_positives = int(_ranks(np.array([threshold]), references)[0])
    level = 1.0 - (1.0 - confidence) / 2.0
    tpr_lower = float(_lower(np.int64(k), np.int64(m), level, "clopper-pearson"))
    fpr_upper = float(_upper(np.int64(false_positives), np.int64(n), level, "clopper-pearson"))
    tpr, fpr = true_positives / m, false_positives / n
    with np.errstate(divide="ignore"):
        estimate = float(np.log(tpr) - np.log(fpr)) / duplicates
        epsilon = max(0.0, float(np.log(tpr_lower) - np.log(fpr_upper))) / duplicates
    return EpsilonFromExposure(
        epsilon=epsilon,
        epsilon_estimate=estimate,
        threshold=threshold,
        tpr=tpr,
        fpr=fpr,
        tpr_lower=tpr_lower,
        fpr_upper=fpr_upper,
        true_positives=true_positives,
        false_positives=false_positives,
        num_canaries=m,
        num_references=n,
        quantile=quantile,
        confidence=confidence,
        duplicates=duplicates,
    )
