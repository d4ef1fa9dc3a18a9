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

import numpy as np
from scipy import optimize, special

from .._core.validation import check_count, check_positive, check_probability

__all__ = ["gaussian_epsilon", "gaussian_noise_multiplier", "gdp_delta", "gdp_epsilon", "gdp_mu"]

_XTOL = 1e-12


def _log_gdp_delta(epsilon: float, mu: float) -> float:
    """log δ(ε) for μ-GDP; -inf when δ(ε) = 0 (only for μ = 0)."""
    if mu <= 0.0:
        return -np.inf
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    log_first = special.log_ndtr(a)
    log_ratio = epsilon + special.log_ndtr(b) - log_first  # < 0 for mu > 0
    return float(log_first + np.log(-np.expm1(min(log_ratio, -1e-300))))


def gdp_delta(epsilon, mu):
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
    eps = np.asarray(epsilon, dtype=np.float64)
    mus = np.asarray(mu, dtype=np.float64)
    if np.any(~np.isfinite(eps)) or np.any(eps < 0):
        raise ValueError(f"`epsilon` must be finite and >= 0, got {epsilon!r}")
    if np.any(~np.isfinite(mus)) or np.any(mus < 0):
        raise ValueError(f"`mu` must be finite and >= 0, got {mu!r}")
    logs = np.vectorize(_log_gdp_delta, otypes=[np.float64])(eps, mus)
    out = np.exp(logs)
    return out if out.ndim else float(out)


def _gdp_epsilon_scalar(mu: float, delta: float) -> float:
    log_delta = np.log(delta)
    if _log_gdp_delta(0.0, mu) <= log_delta:
        return 0.0
    high = max(1.0, mu * mu)
    while _log_gdp_delta(high, mu) > log_delta:
        high *= 2.0
    root = optimize.brentq(lambda e: _log_gdp_delta(e, mu) - log_delta, 0.0, high, xtol=_XTOL, rtol=4 * np.finfo(float).eps)
    return max(0.0, root - 2 * _XTOL * (1 + root))  # round down: safe for lower bounds


def gdp_epsilon(mu, delta: float):
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
    mus = np.asarray(mu, dtype=np.float64)
    if np.any(~np.isfinite(mus)) or np.any(mus < 0):
        raise ValueError(f"`mu` must be finite and >= 0, got {mu!r}")
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
    delta = check_probability(delta, "delta")
    log_delta = np.log(delta)
    low, high = 0.0, 1.0
    while _log_gdp_delta(epsilon, high) < log_delta:
        low, high = high, 2.0 * high
    root = optimize.brentq(lambda m: _log_gdp_delta(epsilon, m) - log_delta, low, high, xtol=_XTOL, rtol=4 * np.finfo(float).eps)
    return max(0.0, root - 2 * _XTOL * (1 + root))


def _gaussian_pld(noise_multiplier: float, sampling_prob: float, num_steps: int, pessimistic: bool, discretization: float):
    from dp_accounting.pld import privacy_loss_distribution

    pld = privacy_loss_distribution.from_gaussian_mechanism(
        noise_multiplier,
        sensitivity=1.0,
        sampling_prob=sampling_prob,
        pessimistic_estimate=pessimistic,
        value_discretization_interval=discretization,
        use_connect_dots=pessimistic,  # connect-the-dots is pessimistic-only
    )
    return pld.self_compose(num_steps) if num_steps > 1 else pld


def _check_mechanism(noise_multiplier, sampling_prob, num_steps):
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    sampling_prob = float(sampling_prob)
    if not 0.0 < sampling_prob <= 1.0:
        raise ValueError(f"`sampling_prob` must be in (0, 1], got {sampling_prob:g}")
    num_steps = check_count(num_steps, "num_steps", minimum=1)
    return noise_multiplier, sampling_prob, num_steps


def gaussian_epsilon(
    noise_multiplier: float,
    delta: float,
    *,
    sampling_prob: float = 1.0,
    num_steps: int = 1,
    pessimistic: bool = True,
    discretization: float = 1e-4,
) -> float:
    """ε(δ) of the (subsampled, composed) Gaussian mechanism, via dp_accounting's PLD.

    Sensitivity is 1 and ``noise_multiplier`` is the noise standard deviation.
    With ``pessimistic=True`` (default) the value is an upper bound on the true
    ε(δ), as accounting requires; ``pessimistic=False`` gives a lower estimate,
    which is the safe side when the result feeds a lower bound.

    >>> round(gaussian_epsilon(1.0, 1e-5), 2)  # one step: equals μ-GDP with μ = 1
    4.38
    >>> round(gaussian_epsilon(1.0, 1e-5, sampling_prob=0.01, num_steps=1000), 2)
    1.83
    """
    noise_multiplier, sampling_prob, num_steps = _check_mechanism(noise_multiplier, sampling_prob, num_steps)
    delta = check_probability(delta, "delta")
    pld = _gaussian_pld(noise_multiplier, sampling_prob, num_steps, pessimistic, discretization)
    return float(pld.get_epsilon_for_delta(delta))


def gaussian_noise_multiplier(epsilon: float, delta: float, *, sampling_prob: float = 1.0, num_steps: int = 1) -> float:
    """Smallest noise multiplier whose PLD accounting gives (ε, δ)-DP.

    Uses dp_accounting's ``calibrate_dp_mechanism`` with a PLD accountant; the
    answer errs on the side of more noise (a valid calibration).

    >>> sigma = gaussian_noise_multiplier(1.0, 1e-5)
    >>> round(sigma, 2), gaussian_epsilon(sigma, 1e-5) <= 1.0
    (3.73, True)
    """
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    _, sampling_prob, num_steps = _check_mechanism(1.0, sampling_prob, num_steps)

    def make_event(sigma: float):
        event = dp_accounting.GaussianDpEvent(sigma)
        if sampling_prob < 1.0:
            event = dp_accounting.PoissonSampledDpEvent(sampling_prob, event)
        return dp_accounting.SelfComposedDpEvent(event, num_steps)

    def epsilon_of(sigma: float) -> float:
        return _gaussian_pld(sigma, sampling_prob, num_steps, True, 1e-4).get_epsilon_for_delta(delta)

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
