"""One-shot privacy estimation with random canaries (Andrew et al., One-shot §3–5).

Canaries drawn uniformly from the unit sphere of R^d are inserted into
training; the statistic is the cosine between each canary and the released
model (or model delta). Score convention: a higher cosine means "more likely
inserted". For a canary that was *not* inserted, Theorem 3.1 gives the exact
law: (1 + cos)/2 ~ Beta((d - 1)/2, (d - 1)/2), close to N(0, 1/d) (Thm 3.2).

* :func:`epsilon_two_gaussians`: the optimal ε(δ) between two Gaussians of
  any variances, through the privacy-loss random variable (§3.2), in logs.
* :func:`epsilon_one_shot`: the paper's *estimate* ε_est: a Gaussian fitted to
  the inserted canaries' cosines against the null (Algorithms 1–3). It is not
  a bound (§4: "should not be construed as a formal bound").
* :func:`epsilon_lower_bound_cosines`: ε_lo (§5.1): threshold attacks with the
  FNR bounded from above and the FPR read off the exact null law.

Readings of the paper, each taken in the conservative direction:

* ε between two Gaussians is the larger of the two orderings, as the pair of
  conditions in §3.2 requires; it is rounded *up* (more privacy loss), since
  ε_est is meant to flag leakage.
* ε_est fits σ̂ as Algorithms 1–3 are written. At small δ the noise in σ̂ only
  ever raises ε (a wider or narrower fit opens an unbounded tail), so this
  errs high. One-shot Table 2 is reproduced by ``equal_variance=True`` instead.
* §5.1 does not say how the threshold of ε_lo is chosen. The best of many
  thresholds on the same cosines is optimistic, so by default a fixed set of
  ranks is tested with a Bonferroni correction; ``correction="none"`` (every
  cosine as a threshold, as Jagielski et al. do) is marked ``valid=False``.
* The k canaries of one run are treated as independent draws, as the paper
  does; this is exact only as d → ∞ (Theorem 3.3).
* :func:`anderson_gaussianity` (Appendix B) tests the Gaussian fit that ε_est
  relies on, with mean and variance estimated. Its p-value is interpolated in
  scipy's table and so clipped to [0.01, 0.15]; a small p-value says the fit,
  and so ε_est, is suspect. A large one does not prove Gaussianity.
"""

from __future__ import annotations

import dataclasses
from typing import TypeAlias, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import integrate, optimize, special, stats

from .._core.results import Result
from .._core.validation import as_scores, check_choice, check_count, check_positive, check_probability, check_real
from .intervals import BINOMIAL_METHODS, _upper

_Region: TypeAlias = "list[tuple[float, float]]"  # disjoint open intervals (low, high)

__all__ = [
    "CosineLowerBound",
    "GaussianityCheck",
    "OneShotEstimate",
    "anderson_gaussianity",
    "epsilon_lower_bound_cosines",
    "epsilon_one_shot",
    "epsilon_two_gaussians",
    "null_cosine_logsf",
]

_MAX_EPSILON = 1e8  # past this the two laws are reported as disjoint (ε = inf)
_MAX_SHIFT = 1e6  # means this many standard deviations apart: ε > _MAX_EPSILON at every δ
_MAX_SIGMA_RATIO = 1e30  # keeps the loss quadratic's coefficients far inside float range
_LOG_FLOOR = -1e300  # finite stand-in for log 0, so brentq never sees -inf
_XTOL = 1e-12
_FAR_TAIL = -600.0  # below this scipy's log(sf) is near underflow; integrate instead
CORRECTIONS = ("bonferroni", "none")


# --- ε between two Gaussians (One-shot §3.2) ---------------------------------------------


def _log_between(z1: float, z2: float) -> float:
    """log P(z1 < Z < z2) for standard normal Z, without cancellation."""
    if z2 <= z1:
        return -np.inf
    if z2 <= 0.0:  # both in the left tail
        high, low = special.log_ndtr(z2), special.log_ndtr(z1)
    elif z1 >= 0.0:  # both in the right tail
        high, low = special.log_ndtr(-z1), special.log_ndtr(-z2)
    else:  # straddles 0: the mass is >= the smaller half's share, no cancellation
        with np.errstate(divide="ignore"):  # both tails hold all the mass: log 0
            return float(np.log1p(-(special.ndtr(z1) + special.ndtr(-z2))))
    with np.errstate(divide="ignore"):  # equal tails: an empty interval, log 0
        return float(high + np.log1p(-np.exp(low - high)))


def _log_prob(region: _Region, mu: float, sigma: float) -> float:
    """log P(X in region) for X ~ N(mu, sigma²); region is a list of disjoint (low, high)."""
    terms = [_log_between((low - mu) / sigma, (high - mu) / sigma) for low, high in region]
    return float(np.logaddexp.reduce(terms)) if terms else -np.inf


def _loss_region(epsilon: float, mu_p: float, sigma_p: float, mu_q: float, sigma_q: float) -> _Region:
    """The set {x : log p(x)/q(x) > ε} = {a x² + b x + c > 0} as disjoint intervals."""
    a = 0.5 / sigma_q**2 - 0.5 / sigma_p**2
    b = mu_p / sigma_p**2 - mu_q / sigma_q**2
    c = 0.5 * (mu_q / sigma_q) ** 2 - 0.5 * (mu_p / sigma_p) ** 2 + np.log(sigma_q / sigma_p) - epsilon
    if a == 0.0:
        if b == 0.0:
            return [(-np.inf, np.inf)] if c > 0 else []
        root = -c / b
        return [(root, np.inf)] if b > 0 else [(-np.inf, root)]
    # b² - 4ac in closed form: the expanded difference cancels catastrophically when σ_q << σ_p
    discriminant = ((mu_p - mu_q) / (sigma_p * sigma_q)) ** 2 - 4 * a * (np.log(sigma_q / sigma_p) - epsilon)
    if discriminant <= 0.0:
        return [(-np.inf, np.inf)] if a > 0 else []
    sqrt_disc = np.sqrt(discriminant)
    q = -0.5 * (b + np.copysign(sqrt_disc, b))  # the stable pair of roots
    low, high = sorted((q / a, c / q) if q != 0.0 else (-sqrt_disc / (2 * a), sqrt_disc / (2 * a)))
    return [(-np.inf, low), (high, np.inf)] if a > 0 else [(low, high)]


def _log_hockey_stick(epsilon: float, mu_p: float, sigma_p: float, mu_q: float, sigma_q: float) -> float:
    """log δ(ε) = log(P(L > ε) - e^ε Q(L > ε)), L = log p(X)/q(X) the privacy loss."""
    region = _loss_region(epsilon, mu_p, sigma_p, mu_q, sigma_q)
    log_p = _log_prob(region, mu_p, sigma_p)
    if not np.isfinite(log_p):
        return -np.inf
    log_ratio = epsilon + _log_prob(region, mu_q, sigma_q) - log_p  # <= 0 on the region
    return float(log_p + np.log(-np.expm1(log_ratio))) if log_ratio < 0 else -np.inf


def _epsilon_for_delta(log_delta: float, mu_p: float, sigma_p: float, mu_q: float, sigma_q: float) -> float:
    """Smallest ε with δ(ε) <= δ for the ordered pair (P, Q), rounded up."""

    def gap(epsilon: float) -> float:
        return max(_log_hockey_stick(epsilon, mu_p, sigma_p, mu_q, sigma_q), _LOG_FLOOR) - log_delta

    if gap(0.0) <= 0.0:
        return 0.0
    low, high = 0.0, 1.0
    while gap(high) > 0.0:  # δ(ε) decreases in ε: double until bracketed
        low, high = high, 2.0 * high
        if high > _MAX_EPSILON:
            return np.inf
    root = optimize.brentq(gap, low, high, xtol=_XTOL, rtol=4 * np.finfo(float).eps)
    return float(root + 2 * _XTOL * (1 + root))  # round up: δ(returned ε) <= δ


def epsilon_two_gaussians(mu0: float, sigma0: float, mu1: float, sigma1: float, *, delta: float) -> float:
    """Optimal ε(δ) between N(mu0, sigma0²) and N(mu1, sigma1²), both ways (One-shot §3.2).

    For an ordered pair (P, Q) the region {L > ε} of the privacy loss
    L = log p(X)/q(X) is where a quadratic in x is positive, so
    δ(ε) = P(L > ε) - e^ε Q(L > ε) is a sum of normal tail masses, taken in
    logs. The smallest ε with δ(ε) <= δ is found by doubling and brentq on
    log δ(ε), for both orders; the larger is returned, as DP must hold for
    both neighbours. With unequal variances L is unbounded on one side, so
    ε grows without bound as δ → 0.

    Parameters
    ----------
    mu0, mu1 : float
        The means.
    sigma0, sigma1 : float > 0
        The standard deviations.
    delta : float in (0, 1)

    Returns
    -------
    float
        ε >= 0, rounded up by ~1e-12 (an estimate errs towards more leakage);
        ``inf`` beyond 1e8 (means more than 1e6 ``sigma0`` apart included).
        A standard-deviation ratio beyond 1e±30 is refused with a ValueError.

    Examples
    --------
    With equal variances it is the Gaussian mechanism, μ-GDP with μ = |mu1 - mu0|/σ:

    >>> from privaudit.stats.conversions import gdp_epsilon
    >>> abs(epsilon_two_gaussians(0.0, 2.0, 2.0, 2.0, delta=1e-5) - gdp_epsilon(1.0, 1e-5)) < 1e-9
    True
    >>> round(epsilon_two_gaussians(0.0, 1.0, 1.0, 1.5, delta=1e-5), 2)  # the wider tail dominates
    17.09
    """
    mu0, mu1 = check_real(mu0, "mu0"), check_real(mu1, "mu1")
    sigma0, sigma1 = check_positive(sigma0, "sigma0"), check_positive(sigma1, "sigma1")
    log_delta = np.log(check_probability(delta, "delta"))
    # ε is invariant under x -> (x - mu0)/sigma0: compare N(0, 1) with N(d, r²), free of overflow
    log_ratio = float(np.log(sigma1) - np.log(sigma0))
    if abs(log_ratio) > np.log(_MAX_SIGMA_RATIO):
        raise ValueError(f"`sigma1`/`sigma0` must be in [{1 / _MAX_SIGMA_RATIO:g}, {_MAX_SIGMA_RATIO:g}], got exp({log_ratio:.4g})")
    with np.errstate(over="ignore"):
        difference = np.float64(mu1) - np.float64(mu0)
        # the plain difference when it is finite: halving subnormal means would round them to 0 (σ = 5e-324
        # gave ε = 0 for means one σ apart); halves only where the difference itself overflows
        shift = float(difference / sigma0 if np.isfinite(difference) else 2.0 * ((0.5 * mu1 - 0.5 * mu0) / sigma0))
    if not abs(shift) <= _MAX_SHIFT:
        return np.inf  # ε >= d²/2 - 8.3 d > 1e8 for every δ a float can hold
    ratio = float(np.exp(log_ratio))
    return float(max(_epsilon_for_delta(log_delta, 0.0, 1.0, shift, ratio), _epsilon_for_delta(log_delta, shift, ratio, 0.0, 1.0)))


# --- ε_est (Algorithms 1–3) ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OneShotEstimate(Result):
    """The one-shot estimate ε_est with the two Gaussian fits it compares.

    ``null`` says where the null came from ("N(0, 1/d)" or "fitted to
    null_cosines"); ``num_null`` counts the null cosines (None for N(0, 1/d)).
    """

    epsilon: float
    delta: float
    observed_mean: float
    observed_std: float
    null_mean: float
    null_std: float
    num_canaries: int
    num_null: int | None
    null: str
    dimension: int | None
    equal_variance: bool
    kind: str = "estimate"


def _as_cosines(values: ArrayLike, name: str, *, min_size: int = 1) -> NDArray[np.float64]:
    cosines = as_scores(values, name, min_size=min_size)
    if np.any(np.abs(cosines) > 1.0):
        raise ValueError(f"`{name}` must lie in [-1, 1]")
    return cosines


def _fit(values: np.ndarray, name: str) -> tuple[float, float]:
    scale = float(np.max(np.abs(values))) or 1.0  # scaled, so squares of values near 1e308 cannot overflow
    std = scale * float((values / scale).std())  # divisor k, as the paper's σ̂ (§3)
    if std == 0.0:
        raise ValueError(f"`{name}` must not all be equal")
    return float(values.mean()), std


def epsilon_one_shot(
    canary_cosines: ArrayLike,
    null_cosines: ArrayLike | None = None,
    *,
    dimension: int | None = None,
    delta: float,
    equal_variance: bool = False,
) -> OneShotEstimate:
    """The one-shot estimate ε_est (One-shot Algorithms 1–3).

    Parameters
    ----------
    canary_cosines : 1-D array, at least 2 values
        Cosines of the *inserted* canaries with the released model (final
        model, Algorithm 2) or their max over model deltas (Algorithm 3).
    null_cosines : 1-D array, optional
        Cosines of canaries that were never inserted (Algorithm 3's c⁰). Give
        this or ``dimension``, not both.
    dimension : int >= 2, optional
        Model dimension d: the null is N(0, 1/d) (Algorithms 1–2, Thm 3.2).
    delta : float in (0, 1)
    equal_variance : bool
        Compare with the null's variance for both laws, so only the mean shift
        counts (the Gaussian mechanism's case, Theorem 3.3). The default fits
        σ̂ as the algorithms are written; at small δ its sampling noise raises
        ε (k = 1000, δ = 1e-6: a true ε = 1 averages about 1.34).

    Returns
    -------
    OneShotEstimate
        ``kind="estimate"``: no confidence statement comes with it.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d, sigma = 10**6, 1.54  # One-shot Table 2: σ = 1.54 gives ε = 3 at δ = 1e-6
    >>> cosines = rng.normal(1 / (sigma * np.sqrt(d)), 1 / np.sqrt(d), 1000)
    >>> result = epsilon_one_shot(cosines, dimension=d, delta=1e-6, equal_variance=True)
    >>> result.kind, bool(2.6 < result.epsilon < 3.4)
    ('estimate', True)
    """
    observed = _as_cosines(canary_cosines, "canary_cosines", min_size=2)
    delta = check_probability(delta, "delta")
    if (dimension is None) == (null_cosines is None):
        raise ValueError("exactly one of `dimension` and `null_cosines` must be given")
    observed_mean, observed_std = _fit(observed, "canary_cosines")
    if dimension is not None:
        dimension = check_count(dimension, "dimension", minimum=2)
        null_mean, null_std, null, num_null = 0.0, 1.0 / np.sqrt(dimension), "N(0, 1/d)", None
    else:
        null_values = _as_cosines(cast("ArrayLike", null_cosines), "null_cosines", min_size=2)  # not None: checked above
        (null_mean, null_std), null, num_null = _fit(null_values, "null_cosines"), "fitted to null_cosines", null_values.size
    compared_std = null_std if equal_variance else observed_std
    return OneShotEstimate(
        epsilon=epsilon_two_gaussians(null_mean, null_std, observed_mean, compared_std, delta=delta),
        delta=delta,
        observed_mean=observed_mean,
        observed_std=observed_std,
        null_mean=null_mean,
        null_std=null_std,
        num_canaries=observed.size,
        num_null=num_null,
        null=null,
        dimension=dimension,
        equal_variance=bool(equal_variance),
    )


# --- the exact null law and ε_lo (Theorem 3.1, §5.1) ---------------------------------------


def _log_null_density(t: float, dimension: int) -> float:
    log_norm = special.gammaln(dimension / 2) - special.gammaln((dimension - 1) / 2) - 0.5 * np.log(np.pi)
    return cast(float, log_norm + 0.5 * (dimension - 3) * (np.log1p(-t) + np.log1p(t)))  # 1 - t² without cancellation


def _far_tail_logsf(t: float, dimension: int) -> float:
    """log P(cos > t) deep in the right tail (d > 3, 0 < t < 1), where log(sf) underflows.

    log f is concave, so f(t + u/λ) <= f(t) e^{-u} with λ = -(log f)'(t):
    sf = f(t)/λ · ∫₀^{λ(1-t)} f(t + u/λ)/f(t) du, the integral in (0, 1].
    """
    rate = (dimension - 3) * t / (1 - t * t)
    log_f = _log_null_density(t, dimension)

    def scaled(u: float) -> float:
        with np.errstate(divide="ignore"):  # log 0 at cos = 1 exactly: density 0
            return cast(float, np.exp(_log_null_density(t + u / rate, dimension) - log_f))

    upper = min(rate * (1 - t), 800.0)  # the integrand is below e^-800 beyond
    integral = integrate.quad(scaled, 0.0, upper, points=[1.0, 10.0] if upper > 10 else None, epsabs=0.0, epsrel=1e-10)[0]
    return float(log_f - np.log(rate) + np.log(integral))


def null_cosine_logsf(threshold: ArrayLike, dimension: int) -> NDArray[np.float64] | float:
    """log P(cos > t) for a uniform random unit vector in R^d (One-shot Theorem 3.1).

    Uses (1 + cos)/2 ~ Beta((d - 1)/2, (d - 1)/2); deep in the tail, where
    scipy's log survival function would underflow, the density is integrated
    in logs instead. No validation: ``dimension`` must be an int >= 2.

    >>> round(float(np.exp(null_cosine_logsf(0.0, 100))), 12)  # symmetric law
    0.5
    >>> round(float(null_cosine_logsf(0.05, 10**6)), 1)  # 50 standard deviations out; finite
    -1256.4
    """
    t = np.asarray(threshold, dtype=np.float64)
    half = (dimension - 1) / 2.0
    out = np.asarray(stats.beta.logsf((1.0 + t) / 2.0, half, half), dtype=np.float64)
    far = (out < _FAR_TAIL) & (t < 1.0) if dimension > 3 else np.zeros(t.shape, dtype=bool)
    if np.any(far):
        out = out.copy()
        out[far] = [_far_tail_logsf(float(v), dimension) for v in t[far]]
    return out if out.ndim else float(out)


@dataclasses.dataclass(frozen=True)
class CosineLowerBound(Result):
    """ε_lo from canary cosines, with the threshold test that attained it.

    At ``threshold`` a canary is called inserted when its cosine is >= it:
    ``false_negatives`` canaries fall below, the true-positive rate is at
    least ``tpr_lower`` (= 1 - ``fnr_upper``) and the null's false-positive
    rate is exactly ``fpr``. ``num_thresholds`` tests were tried.
    """

    epsilon: float
    delta: float
    confidence: float
    interval: str
    correction: str
    kind: str
    valid: bool
    threshold: float
    false_negatives: int
    tpr_lower: float
    fnr_upper: float
    fpr: float
    num_canaries: int
    num_thresholds: int
    dimension: int


def epsilon_lower_bound_cosines(
    canary_cosines: ArrayLike,
    *,
    dimension: int,
    delta: float,
    confidence: float = 0.95,
    interval: str = "jeffreys",
    correction: str = "bonferroni",
    num_thresholds: int = 16,
) -> CosineLowerBound:
    """The one-shot lower bound ε_lo (One-shot §5.1) from inserted canaries' cosines.

    The attack calls a canary inserted when its cosine is >= t. Its FPR is
    exact, from the null law of Theorem 3.1; its FNR is bounded from above
    with a Jeffreys interval (the paper's choice; approximate) or
    Clopper–Pearson (exact). ε follows Eq. (1) (Kairouz et al. 2015):
    ε >= max(log((1 - δ - FPR)/FNR), log((1 - δ - FNR)/FPR)), floored at 0.

    With ``correction="bonferroni"`` the thresholds are the order statistics
    X_(j) of the k cosines at ``num_thresholds`` ranks j fixed in advance
    (geometric from 1 to k), each bounded at confidence 1 - (1 - c)/m. At
    t = X_(j) the true FNR is F(X_(j)) ~ Beta(j, k - j + 1), which the
    Clopper–Pearson bound at j - 1 misses inverts exactly, so that version
    holds at confidence c over all m tests. ``correction="none"`` tries every
    cosine at confidence c each and takes the best: the paper's reading,
    optimistic, so ``valid=False``.

    Parameters
    ----------
    canary_cosines : 1-D array in [-1, 1]
        Cosines of the inserted canaries with the final model (Algorithm 2).
        For Algorithm 3's max-over-rounds statistic the null law is unknown:
        use :func:`privaudit.epsilon_lower_bound` with the unobserved
        canaries' cosines as out-scores.
    dimension : int >= 2
    delta : float in (0, 1)
    confidence : float in (0, 1)
    interval : {"jeffreys", "clopper-pearson"}
    correction : {"bonferroni", "none"}
    num_thresholds : int >= 1
        Number of ranks tested with the Bonferroni correction.

    Returns
    -------
    CosineLowerBound
        ``kind`` is "lower bound" (Clopper–Pearson) or "approximate lower
        bound" (Jeffreys), prefixed "optimistic" when ``valid`` is False.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d = 10**4
    >>> cosines = rng.normal(3 / np.sqrt(d), 1 / np.sqrt(d), 1000)  # ~ 3-GDP: ε(1e-5) ≈ 14.4
    >>> result = epsilon_lower_bound_cosines(cosines, dimension=d, delta=1e-5, interval="clopper-pearson")
    >>> result.kind, result.valid, bool(1.0 < result.epsilon < 14.4)
    ('lower bound', True, True)
    """
    cosines = _as_cosines(canary_cosines, "canary_cosines")
    dimension = check_count(dimension, "dimension", minimum=2)
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    interval = check_choice(interval, "interval", BINOMIAL_METHODS)
    correction = check_choice(correction, "correction", CORRECTIONS)
    num_thresholds = check_count(num_thresholds, "num_thresholds", minimum=1)

    k = cosines.size
    if correction == "bonferroni":
        ranks = np.unique(np.geomspace(1, k, min(num_thresholds, k)).round().astype(np.int64))
        level = 1.0 - (1.0 - confidence) / ranks.size
    else:
        ranks, level = np.arange(1, k + 1), confidence
    thresholds = np.sort(cosines)[ranks - 1]
    misses = ranks - 1  # cosines below X_(j); ties only lower the true count, which is safe
    fnr_upper = _upper(misses, np.full(ranks.shape, k), level, interval)
    log_fpr = null_cosine_logsf(thresholds, dimension)
    with np.errstate(divide="ignore"):  # log 0 = -inf: that test gives no bound
        fpr = np.exp(log_fpr)
        first = np.log1p(np.clip(-delta - fpr, -1.0, 0.0)) - np.log(fnr_upper)
        second = np.log1p(np.clip(-delta - fnr_upper, -1.0, 0.0)) - log_fpr
    candidates = np.nan_to_num(np.maximum(first, second), nan=-np.inf, posinf=np.inf)
    best = int(np.argmax(candidates))
    valid = correction == "bonferroni"
    kind = "lower bound" if interval == "clopper-pearson" else "approximate lower bound"
    return CosineLowerBound(
        epsilon=max(0.0, float(candidates[best])),
        delta=delta,
        confidence=confidence,
        interval=interval,
        correction=correction,
        kind=kind if valid else f"optimistic {kind}",
        valid=valid,
        threshold=float(thresholds[best]),
        false_negatives=int(misses[best]),
        tpr_lower=float(1.0 - fnr_upper[best]),
        fnr_upper=float(fnr_upper[best]),
        fpr=float(fpr[best]),
        num_canaries=k,
        num_thresholds=int(ranks.size),
        dimension=dimension,
    )


# --- the Gaussian fit's check (Appendix B) --------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GaussianityCheck(Result):
    """Anderson–Darling test of normality (mean and variance estimated) of one set of cosines.

    ``pvalue`` is interpolated in scipy's table, so it lies in [0.01, 0.15]:
    0.15 means "0.15 or more", 0.01 "0.01 or less". ``rejected`` is
    ``pvalue < alpha``.
    """

    statistic: float
    pvalue: float
    alpha: float
    rejected: bool
    num_values: int
    test: str = "Anderson-Darling, normal with estimated mean and variance"


def anderson_gaussianity(values: ArrayLike, *, alpha: float = 0.05) -> GaussianityCheck:
    """The Anderson–Darling check of One-shot Appendix B, via ``scipy.stats.anderson``.

    Parameters
    ----------
    values : 1-D array, at least 8 values
    alpha : float in (0, 1)
        Significance level of ``rejected``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> anderson_gaussianity(rng.normal(size=1000)).rejected
    False
    >>> anderson_gaussianity(rng.exponential(size=1000)).rejected
    True
    """
    values = as_scores(values, "values", min_size=8)
    alpha = check_probability(alpha, "alpha")
    _fit(values, "values")
    result = stats.anderson(values, dist="norm", method="interpolate")
    pvalue = float(result.pvalue)
    return GaussianityCheck(statistic=float(result.statistic), pvalue=pvalue, alpha=alpha, rejected=bool(pvalue < alpha), num_values=int(values.size))
