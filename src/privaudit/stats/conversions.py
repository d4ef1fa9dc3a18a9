"""Conversions between μ-GDP, (ε, δ)-DP and the Gaussian mechanism's noise.

* μ-GDP ↔ (ε, δ): Dong, Roth and Su's Corollary (Tight Auditing, Eq. 6),
  δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), evaluated in the log domain.
* Gaussian-mechanism noise ↔ ε: through dp_accounting's privacy-loss
  distributions (PLD), which also cover Poisson subsampling and composition.

Rounding. Functions that invert a monotone map round towards the *smaller*
answer (``gdp_epsilon``, ``gdp_mu``) because privaudit uses them to turn lower
bounds into lower bounds; ``gaussian_epsilon`` reports dp_accounting's
pessimistic (upper) ε, as an accountant should, unless asked otherwise.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._core.validation import as_real_array, check_count, check_positive, check_probability, check_real
from .roots import brentq  # scipy.optimize's brentq, without its import time

__all__ = ["gaussian_epsilon", "gaussian_noise_multiplier", "gdp_delta", "gdp_epsilon", "gdp_mu", "pld_grid_points"]

_XTOL = 1e-12
#: Largest μ whose ε(δ) stays far inside float range (ε ≈ μ²/2).
MAX_MU = 1e100


def _log_gdp_delta(epsilon: float, mu: float) -> float:
    """log δ(ε) for μ-GDP; -inf when δ(ε) = 0 (only for μ = 0)."""
    if mu <= 0.0:
        return -np.inf
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    log_first = special.log_ndtr(a)
    if log_first == -np.inf:  # δ(ε) below the smallest float: ε far beyond μ²
        return -np.inf
    log_ratio = epsilon + special.log_ndtr(b) - log_first  # < 0 for mu > 0
    return float(log_first + np.log(-np.expm1(min(log_ratio, -1e-300))))


@overload
def gdp_delta(epsilon: float, mu: float) -> float: ...
@overload
def gdp_delta(epsilon: ArrayLike, mu: ArrayLike) -> NDArray[np.float64] | float: ...


def gdp_delta(epsilon: ArrayLike, mu: ArrayLike) -> NDArray[np.float64] | float:
    """δ(ε) of a μ-GDP mechanism (Tight Auditing, Eq. 6), vectorised.

    Parameters
    ----------
    epsilon : float or array, >= 0
    mu : float or array, >= 0

    Examples
    --------
    >>> round(float(gdp_delta(1.0, 1.0)), 6)
    0.126937
    >>> from scipy.stats import norm
    >>> bool(abs(gdp_delta(0.0, 2.0) - (2 * norm.cdf(1.0) - 1)) < 1e-15)  # at ε = 0, δ is the TV distance
    True
    """
    eps = as_real_array(epsilon, "epsilon")
    mus = as_real_array(mu, "mu")
    if np.any(~np.isfinite(eps)) or np.any(eps < 0):
        raise ValueError(f"`epsilon` must be finite and >= 0, got {epsilon!r}")
    if np.any(~np.isfinite(mus)) or np.any(mus < 0):
        raise ValueError(f"`mu` must be finite and >= 0, got {mu!r}")
    logs = np.vectorize(_log_gdp_delta, otypes=[np.float64])(eps, mus)
    out = np.exp(logs)
    return out if out.ndim else float(out)


def _gdp_epsilon_scalar(mu: float, delta: float, round_up: bool = False) -> float:
    log_delta = np.log(delta)
    if _log_gdp_delta(0.0, mu) <= log_delta:
        return 0.0
    high = max(1.0, mu * mu)
    while _log_gdp_delta(high, mu) > log_delta:
        high *= 2.0
    root = brentq(lambda e: _log_gdp_delta(e, mu) - log_delta, 0.0, high, xtol=_XTOL, rtol=4 * np.finfo(float).eps)
    if round_up:  # an accountant's ε: δ(returned ε) <= δ
        return float(root + 2 * _XTOL * (1 + root))
    return float(max(0.0, root - 2 * _XTOL * (1 + root)))  # round down: safe for lower bounds


def _check_mu(mu: ArrayLike, name: str = "mu") -> NDArray[np.float64]:
    mus = as_real_array(mu, name)
    if np.any(~np.isfinite(mus)) or np.any(mus < 0) or np.any(mus > MAX_MU):
        raise ValueError(f"`{name}` must be in [0, {MAX_MU:g}], got {mu!r}")
    return mus


@overload
def gdp_epsilon(mu: float, delta: float) -> float: ...
@overload
def gdp_epsilon(mu: ArrayLike, delta: float) -> NDArray[np.float64] | float: ...


def gdp_epsilon(mu: ArrayLike, delta: float) -> NDArray[np.float64] | float:
    """Smallest ε with (ε, δ)-DP implied by μ-GDP, rounded down (safe for lower bounds).

    Examples
    --------
    >>> round(gdp_epsilon(1.0, 1e-5), 4)
    4.3772
    >>> gdp_epsilon(0.0, 1e-5)
    0.0
    >>> gdp_epsilon([0.5, 2.0], 1e-5).round(3)
    array([1.993, 9.997])
    """
    delta = check_probability(delta, "delta")
    mus = _check_mu(mu)
    out = np.vectorize(lambda m: _gdp_epsilon_scalar(float(m), delta), otypes=[np.float64])(mus)
    return out if out.ndim else float(out)


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest μ whose μ-GDP guarantee implies (ε, δ)-DP, rounded down.

    It inverts :func:`gdp_delta` in μ; δ(ε; μ) increases with μ.

    >>> mu = gdp_mu(1.0, 1e-5)
    >>> round(mu, 5), abs(gdp_epsilon(mu, 1e-5) - 1.0) < 1e-8
    (0.26805, True)
    """
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    if epsilon > MAX_MU:  # μ ≈ √(2ε) would pass float range on the way
        raise ValueError(f"`epsilon` must be in [0, {MAX_MU:g}], got {epsilon:g}")
    delta = check_probability(delta, "delta")
    log_delta = np.log(delta)
    low, high = 0.0, 1.0
    while _log_gdp_delta(epsilon, high) < log_delta:
        low, high = high, 2.0 * high
    root = brentq(lambda m: _log_gdp_delta(epsilon, m) - log_delta, low, high, xtol=_XTOL, rtol=4 * np.finfo(float).eps)
    return float(max(0.0, root - 2 * _XTOL * (1 + root)))


#: Largest privacy-loss grid a PLD may need: ~10⁷ points compose in seconds and ~1 GiB.
MAX_PLD_POINTS = 10_000_000
_COARSEST = 1e-2  # a privacy-loss grid coarser than this moves ε by too much to report
_MAX_PLD_SIGMA = 1e100  # dp_accounting squares σ
_TAIL_SIGMAS = 9.0  # dp_accounting truncates each step's Gaussian tails near 1e-15 (8.2σ)
_SPREAD_SIGMAS = 17.0  # 2 × 8.5: the composed loss's truncation bounds, one per side


def pld_grid_points(noise_multiplier: float, sampling_prob: float, num_steps: int, discretization: float, pessimistic: bool = True) -> float:
    """Estimated number of privacy-loss grid points of the composed PLD (an order of magnitude).

    One step's loss L(x) = log(1 - q + q exp((2x - 1)/(2σ²))) spans about
    [log(1 - q), L(1 + 9σ)]; after T steps the loss concentrates around T·E[L]
    with spread √T·sd(L), and dp_accounting's Chernoff truncation keeps a few
    single-step widths on top. Grid points are that width over the
    discretisation. The optimistic PLD (no connect-the-dots) rounds every
    step's losses down by up to one grid step, so its support drifts by up to
    T points: they are added. Computed in logs: tiny σ gives inf, never an
    overflow.

    >>> round(pld_grid_points(1.0, 0.01, 100_000, 1e-3), -4)  # dp_accounting's grid: 69,657 points
    90000.0
    """
    sigma, q = np.float64(noise_multiplier), np.float64(sampling_prob)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        log_q, log_keep = np.log(q), np.log1p(-q)
        top = float(np.logaddexp(log_keep, log_q + (0.5 + _TAIL_SIGMAS * sigma) / sigma**2))
        # moments of L under the mixture (1 - q) N(0, σ²) + q N(1, σ²), on a grid of x
        x = np.linspace(-_TAIL_SIGMAS * sigma, 1.0 + _TAIL_SIGMAS * sigma, 4001)
        loss = np.logaddexp(log_keep, log_q + (2.0 * x - 1.0) / (2.0 * sigma**2))
        weights = (1.0 - q) * np.exp(-0.5 * (x / sigma) ** 2) + q * np.exp(-0.5 * ((x - 1.0) / sigma) ** 2)
        weights = weights / weights.sum()
        mean = float(np.sum(weights * loss))
        spread = float(np.sqrt(max(np.sum(weights * (loss - mean) ** 2), 0.0)))
    width = 3.0 * (top - log_keep) + num_steps * abs(mean) + _SPREAD_SIGMAS * np.sqrt(num_steps) * spread
    drift = 0.0 if pessimistic else float(num_steps)
    return float(width / discretization + drift) if np.isfinite(width) else np.inf


def _check_pld_size(noise_multiplier: float, sampling_prob: float, num_steps: int, discretization: float, pessimistic: bool) -> None:
    points = pld_grid_points(noise_multiplier, sampling_prob, num_steps, discretization, pessimistic)
    if points > MAX_PLD_POINTS:
        raise ValueError(
            f"`noise_multiplier` {noise_multiplier:g} with `sampling_prob` {sampling_prob:g} and `num_steps` {num_steps} "
            f"needs a privacy-loss distribution of about {points:.2g} grid points at discretisation {discretization:g}, "
            f"more than the {MAX_PLD_POINTS:.0e} that fit in about a minute; use more noise, fewer steps or a coarser "
            "discretisation"
        )


def _compose(pld: Any, num_steps: int) -> Any:  # dp_accounting PrivacyLossDistribution (untyped)
    """``pld`` composed ``num_steps`` times, by repeated squaring for large counts.

    dp_accounting's ``self_compose`` first evaluates |support|^T as an exact
    integer, which for T ~ 10⁹ alone runs for minutes; composing by squaring
    takes log2 T compositions, each truncating at most 1e-15 of tail mass
    (pessimistic PLDs move it to infinite loss, so the result stays an upper bound).
    """
    if num_steps <= 4096:
        return pld.self_compose(num_steps) if num_steps > 1 else pld
    result, base, remaining = None, pld, num_steps
    while remaining:
        if remaining & 1:
            result = base if result is None else result.compose(base)
        remaining >>= 1
        if remaining:
            base = base.compose(base)
    return result


def _gaussian_pld(noise_multiplier: float, sampling_prob: float, num_steps: int, pessimistic: bool, discretization: float) -> Any:
    from dp_accounting.pld import privacy_loss_distribution

    # a coarser grid keeps either estimate on its safe side (pessimistic rounds losses up, optimistic down), only less tight
    while discretization < _COARSEST and pld_grid_points(noise_multiplier, sampling_prob, num_steps, discretization, pessimistic) > MAX_PLD_POINTS:
        discretization = min(2.0 * discretization, _COARSEST)
    _check_pld_size(noise_multiplier, sampling_prob, num_steps, discretization, pessimistic)
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        noise_multiplier,
        sensitivity=1.0,
        sampling_prob=sampling_prob,
        pessimistic_estimate=pessimistic,
        value_discretization_interval=discretization,
        use_connect_dots=pessimistic,  # connect-the-dots is pessimistic-only
    )
    return _compose(pld, num_steps)


def _check_mechanism(noise_multiplier: Any, sampling_prob: Any, num_steps: Any) -> tuple[float, float, int]:
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    sampling_prob = check_real(sampling_prob, "sampling_prob")
    if not 0.0 < sampling_prob <= 1.0:
        raise ValueError(f"`sampling_prob` must be in (0, 1], got {sampling_prob:g}")
    num_steps = check_count(num_steps, "num_steps", minimum=1)
    return noise_multiplier, sampling_prob, num_steps


def _gdp_mu_of_mechanism(noise_multiplier: float, num_steps: int) -> float:
    """μ = √T/σ of T Gaussian steps without subsampling, or a ValueError if ε(δ) would not fit a float."""
    with np.errstate(over="ignore"):
        mu = np.sqrt(float(num_steps)) / noise_multiplier
    if not mu <= MAX_MU:
        raise ValueError(
            f"`noise_multiplier` must be >= √num_steps/{MAX_MU:g} = {np.sqrt(float(num_steps)) / MAX_MU:.3g}, got {noise_multiplier:g}: ε(δ) would overflow"
        )
    return float(mu)


def gaussian_epsilon(
    noise_multiplier: float,
    delta: float,
    *,
    sampling_prob: float = 1.0,
    num_steps: int = 1,
    pessimistic: bool = True,
    discretization: float = 1e-4,
) -> float:
    """ε(δ) of the (subsampled, composed) Gaussian mechanism.

    Sensitivity is 1 and ``noise_multiplier`` is the noise standard deviation.
    Without subsampling (``sampling_prob=1``) T steps are exactly μ-GDP with
    μ = √T/σ, and ε(δ) is Eq. 6 solved in the log domain: exact at every δ,
    rounded up (``pessimistic=True``) or down. With subsampling it comes from
    dp_accounting's privacy-loss distribution (PLD): ``pessimistic=True``
    (default) gives an upper bound on the true ε(δ), as accounting requires;
    ``pessimistic=False`` a lower estimate, which is the safe side when the
    result feeds a lower bound. A PLD that would need more than
    ``MAX_PLD_POINTS`` grid points is computed on a coarser grid (either
    estimate stays on its side), up to a grid step of 0.01; beyond that it
    is refused with the estimate.

    >>> round(gaussian_epsilon(1.0, 1e-5), 2)  # one step: equals μ-GDP with μ = 1
    4.38
    >>> round(gaussian_epsilon(1.0, 1e-15, num_steps=20), 2)  # √20-GDP, exact at small δ
    44.94
    >>> round(gaussian_epsilon(1.0, 1e-5, sampling_prob=0.01, num_steps=1000), 2)
    1.83
    """
    noise_multiplier, sampling_prob, num_steps = _check_mechanism(noise_multiplier, sampling_prob, num_steps)
    delta = check_probability(delta, "delta")
    discretization = check_positive(discretization, "discretization")
    mu = _gdp_mu_of_mechanism(noise_multiplier, num_steps)
    if sampling_prob == 1.0:
        return _gdp_epsilon_scalar(mu, delta, round_up=bool(pessimistic))
    if _gdp_epsilon_scalar(mu, delta) == 0.0:
        return 0.0  # subsampling only lowers ε: already 0 without it
    if noise_multiplier > _MAX_PLD_SIGMA:
        raise ValueError(f"`noise_multiplier` must be <= {_MAX_PLD_SIGMA:g} with subsampling at δ = {delta:g}, got {noise_multiplier:g}")
    pld = _gaussian_pld(noise_multiplier, sampling_prob, num_steps, pessimistic, discretization)
    try:
        return float(pld.get_epsilon_for_delta(delta))
    except OverflowError:  # dp_accounting's exp(-loss) past float range
        raise ValueError(
            f"`num_steps` {num_steps} with `noise_multiplier` {noise_multiplier:g} and `sampling_prob` {sampling_prob:g} "
            f"moves the privacy loss out of float range at discretisation {discretization:g}; use fewer steps"
        ) from None


def gaussian_noise_multiplier(epsilon: float, delta: float, *, sampling_prob: float = 1.0, num_steps: int = 1) -> float:
    """Smallest noise multiplier whose PLD accounting gives (ε, δ)-DP.

    Without subsampling it is √T/μ with μ = :func:`gdp_mu` (exact GDP);
    otherwise dp_accounting's ``calibrate_dp_mechanism`` with a PLD accountant.
    Either way the answer errs on the side of more noise (a valid calibration).

    >>> sigma = gaussian_noise_multiplier(1.0, 1e-5)
    >>> round(sigma, 2), gaussian_epsilon(sigma, 1e-5) <= 1.0
    (3.73, True)
    """
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    _, sampling_prob, num_steps = _check_mechanism(1.0, sampling_prob, num_steps)

    def make_event(sigma: float) -> Any:
        event = dp_accounting.GaussianDpEvent(sigma)
        if sampling_prob < 1.0:
            event = dp_accounting.PoissonSampledDpEvent(sampling_prob, event)
        return dp_accounting.SelfComposedDpEvent(event, num_steps)

    if sampling_prob == 1.0:  # exactly (√T/σ)-GDP; μ rounded down makes σ err on the side of more noise
        mu = gdp_mu(epsilon, delta)
        with np.errstate(over="ignore"):
            sigma = np.sqrt(float(num_steps)) / mu if mu > 0.0 else np.inf
        if not np.isfinite(sigma):
            raise ValueError(f"`epsilon` must be larger, got {epsilon:g}: (ε, δ)-DP at δ = {delta:g} needs unbounded noise")
        return float(sigma)

    def epsilon_of(sigma: float) -> float:
        return gaussian_epsilon(sigma, delta, sampling_prob=sampling_prob, num_steps=num_steps)

    # Bracket in log scale first: dp_accounting's own bracket search may try
    # tiny noise levels whose PLDs need tens of GiB.
    low, high = 1.0, 1.0
    while epsilon_of(low) <= epsilon:
        low /= 2.0
        if low < 1e-2:
            raise ValueError(f"`epsilon` must be smaller, got {epsilon:g}: needs noise_multiplier < 0.01")
    while epsilon_of(high) > epsilon:
        high *= 2.0
    return float(
        dp_accounting.calibrate_dp_mechanism(
            pld_privacy_accountant.PLDAccountant,
            make_event,
            epsilon,
            delta,
            dp_accounting.ExplicitBracketInterval(low, high),
            tol=1e-4,
        )
    )
