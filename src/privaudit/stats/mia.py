"""Membership-inference attacks calibrated by reference models: LOSS, LiRA and RMIA.

Every attack takes plain numbers and returns one score per record, higher
meaning "member":

* ``target_signals`` (n,): the signal of each of n records on the target model;
* ``reference_signals`` (k, n): the same signal on k reference models;
* ``membership`` (k, n): True where record i was in reference model j's training set.

The signal is the logit-scaled confidence of the true class,
φ = log(p / (1 − p)) (:func:`logit_confidence`, the one place it is
computed). RMIA reads the probability itself, p = 1 / (1 + e^(−φ)), in the log
domain (``log p = −log1p(e^(−φ))``), so no signal is rounded to 1.

Readings of the papers (each where the text admits more than one):

LiRA (Carlini, Chien, Nasr, Song, Terzis, Tramèr, "Membership Inference
Attacks From First Principles", S&P 2022, Algorithm 1 and §IV):

* online: Λ = log N(φ; μ_in, σ²_in) − log N(φ; μ_out, σ²_out), the Gaussians
  fitted per record to the IN and OUT reference signals by maximum likelihood
  (mean, and variance with divisor n, as the paper's "fit Gaussians");
* offline: the one-sided test Λ = 1 − Pr[Z > φ], Z ~ N(μ_out, σ²_out),
  returned as its logarithm log Φ((φ − μ_out)/σ_out) (same ranking, no
  underflow far in the tail);
* global variance: one σ²_in (and one σ²_out) for all records, the pooled
  residual variance Σ_i Σ_j (φ_ij − μ_i)² / Σ_i n_i around each record's own
  mean (the paper's "global variance" for few reference models).

RMIA (Zarifzadeh, Liu, Shokri, "Low-Cost High-Power Membership Inference
Attacks", ICML 2024, §3 and Appendix on the offline setting):

* LR(x, z) = [Pr(x|θ) / Pr(x)] / [Pr(z|θ) / Pr(z)] with Pr(·|θ) the target's
  probability of the true class, and Score(x) = Pr_z[LR(x, z) ≥ γ], the
  fraction of population samples z it dominates;
* online: Pr(x) = ½ (mean over IN references + mean over OUT references), the
  average over reference models with membership of x drawn at ½ (with a
  balanced membership matrix this is the plain mean over all references);
* offline (``offline_a`` = a): Pr(x) = ½ ((1 + a) Pr_OUT(x) + (1 − a)), the
  paper's linear approximation Pr_IN(x) ≈ a Pr_OUT(x) + (1 − a);
* the z terms are computed exactly like the x terms, from the population
  samples' own reference signals and membership (Pr(z) is not dropped or set
  to 1): population samples that are OUT of every reference need the offline
  form.

Ranking without ties: with the same samples z for every x, the score at a
fixed γ is F_z(r(x) − log γ), F_z the empirical distribution of the samples'
r(z), a non-decreasing step function of x's own log ratio
r(x) = log Pr(x|θ) − log Pr(x) (:func:`rmia_log_ratios`). Ranking by r(x)
itself therefore orders every pair the fraction orders the same way and
separates the pairs it ties (the fraction saturates at 0 and 1 and moves in
steps of 1/|z|): the ROC step curve (ties never split) keeps every point and
gains some, so the TPR at every FPR can only rise, and nothing changes where
the fractions have no ties (tests/test_mia_ties.py). The audit ranks by r(x)
and shows the fraction beside it.

>>> membership = [[True, False], [True, False], [False, True], [False, True]]  # 4 references, 2 records
>>> reference = [[3.0, 0.0], [5.0, -2.0], [0.0, 2.0], [-2.0, 4.0]]
>>> target = [4.0, -1.0]  # record 0 looks IN, record 1 looks OUT
>>> lira_online_scores(target, reference, membership).tolist()  # IN N(4, 1), OUT N(-1, 1) for record 0: 0 + 25/2
[12.5, -8.0]
>>> rmia_scores(target, reference, membership, [0.0, 1.0], [[0.0, 1.0]] * 4, offline_a=0.5).tolist()
[1.0, 0.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from .._core.validation import as_real_array, as_scores, check_fraction, check_positive

__all__ = [
    "OUTPUT_KINDS",
    "check_membership",
    "clip_at_resolution",
    "lira_offline_scores",
    "lira_online_scores",
    "logit_confidence",
    "logit_confidence_from_loss",
    "loss_scores",
    "rmia_fractions",
    "rmia_fractions_left_out",
    "rmia_log_ratios",
    "rmia_scores",
]

OUTPUT_KINDS = ("logits", "probabilities")
#: Probabilities are floored at the smallest normal float64: below it a model's output carries no digits.
_TINY = float(np.finfo(np.float64).tiny)
#: How far rows of probabilities may be from summing to 1 (float32 softmax rounding).
_SUM_TOLERANCE = 1e-4

Floats = NDArray[np.float64]


def logit_confidence(outputs: ArrayLike, labels: ArrayLike, *, kind: str) -> Floats:
    """φ = log(p_y / (1 − p_y)) of the true class y, from logits or probabilities, in the log domain.

    From logits z: φ = z_y − logsumexp(z_c, c ≠ y), exact however large the
    gaps (no softmax is formed). From probabilities: φ = log p_y − log Σ_{c≠y} p_c,
    summing the other classes instead of forming 1 − p_y (which rounds to 0
    for a confident model); probabilities are floored at the smallest normal
    float64, so φ stays finite (|φ| <= 708.4).

    Parameters
    ----------
    outputs : array_like, shape (n, classes)
        The model's logits or probabilities; ``classes`` >= 2.
    labels : array_like of int, shape (n,)
        The true class of each row, in [0, classes).
    kind : {"logits", "probabilities"}
        What ``outputs`` are: never guessed here (see ``privaudit.models``).

    Examples
    --------
    >>> logit_confidence([[2.0, 0.0], [0.0, 1000.0]], [0, 1], kind="logits").tolist()
    [2.0, 1000.0]
    >>> logit_confidence([[0.9, 0.1]], [0], kind="probabilities").round(6).tolist()
    [2.197225]
    """
    if kind not in OUTPUT_KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(map(repr, OUTPUT_KINDS))}, got {kind!r}")
    values = as_real_array(outputs, "outputs")
    if values.ndim != 2 or values.shape[1] < 2:
        raise ValueError(f"`outputs` must have shape (n, classes) with classes >= 2, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"`outputs` must contain only finite numbers, got {int(np.count_nonzero(~np.isfinite(values)))} NaN or infinite value(s)")
    label = np.asarray(labels)
    if label.shape != (values.shape[0],) or label.dtype.kind not in "iu" or (label.size and (label.min() < 0 or label.max() >= values.shape[1])):
        raise ValueError(f"`labels` must be {values.shape[0]} integers in [0, {values.shape[1] - 1}], got {label.size} of dtype {label.dtype}")
    rows = np.arange(values.shape[0])
    others = np.ones(values.shape, dtype=bool)
    others[rows, label] = False
    if kind == "logits":
        rest = special.logsumexp(np.where(others, values, -np.inf), axis=1)
        return np.asarray(values[rows, label] - rest, dtype=np.float64)
    if (values < 0).any() or np.abs(values.sum(axis=1) - 1.0).max(initial=0.0) > _SUM_TOLERANCE:
        raise ValueError(f"`outputs` must be probabilities (>= 0, rows summing to 1 within {_SUM_TOLERANCE:g}) for kind='probabilities'")
    rest_sum = np.where(others, values, 0.0).sum(axis=1)
    return np.asarray(np.log(np.maximum(values[rows, label], _TINY)) - np.log(np.maximum(rest_sum, _TINY)), dtype=np.float64)


def logit_confidence_from_loss(losses: ArrayLike) -> Floats:
    """φ = log(p / (1 − p)) from the cross-entropy loss ℓ = −log p of the true class: −ℓ − log(−expm1(−ℓ)).

    Exact for small losses (p near 1), where forming 1 − p would round to 0;
    a loss of 0 (p rounded to 1) is floored at the smallest normal float64,
    as :func:`logit_confidence` floors probabilities (φ <= 708.4).

    >>> logit_confidence_from_loss([np.log(2.0), 1e-20]).round(6).tolist()
    [0.0, 46.051702]
    """
    loss = as_scores(losses, "losses")
    if (loss < 0).any():
        raise ValueError(f"`losses` must be >= 0 (cross-entropy), got minimum {loss.min():g}")
    loss = np.maximum(loss, _TINY)
    return np.asarray(-loss - np.log(-np.expm1(-loss)), dtype=np.float64)


def clip_at_resolution(signals: ArrayLike, resolution: float) -> Floats:
    """φ clipped to ±log((1 − r)/r): the true-class probability clipped to [r, 1 − r], r = ``resolution`` in (0, ½).

    A model whose probabilities are averages of hard votes (a forest of T
    trees, k neighbours) gives p = 1 or 0 for many records, where φ would
    only be ±708 (the floor of the smallest double) and LiRA's Gaussians
    would be fitted to it; clipped at half the model's own step (r = 1/(2T)),
    p = 1 stays above every p < 1 it can give and φ stays finite and ordered.

    >>> clip_at_resolution([800.0, 2.0, -800.0], 1 / (2 * 100)).round(3).tolist()  # a forest of 100 trees: ±log(199)
    [5.293, 2.0, -5.293]
    """
    r = check_positive(resolution, "resolution")
    if not r < 0.5:
        raise ValueError(f"`resolution` must be in (0, 0.5), got {r:g}")
    limit = float(np.log1p(-r) - np.log(r))
    return np.asarray(np.clip(as_scores(signals, "signals"), -limit, limit), dtype=np.float64)


def check_membership(membership: Any, shape: tuple[int, ...], name: str = "membership") -> NDArray[np.bool_]:
    """``membership`` as a boolean array of ``shape`` (booleans, or integers 0/1).

    >>> check_membership([[1, 0]], (1, 2)).tolist()
    [[True, False]]
    >>> check_membership([[1, 0]], (2, 2))
    Traceback (most recent call last):
    ...
    ValueError: `membership` must have shape (references, records) = (2, 2), got (1, 2)
    """
    try:
        member = np.asarray(membership)
    except (TypeError, ValueError) as error:
        raise ValueError(f"`{name}` must be an array of booleans") from error
    if member.shape != shape:
        raise ValueError(f"`{name}` must have shape (references, records) = {shape}, got {member.shape}")
    if member.dtype != bool and (member.dtype.kind not in "iu" or not np.isin(member, (0, 1)).all()):
        raise ValueError(f"`{name}` must be booleans (or integers 0/1), got dtype {member.dtype}")
    return member.astype(bool)


def _check(target: ArrayLike, reference: ArrayLike, membership: ArrayLike, prefix: str = "") -> tuple[Floats, Floats, NDArray[np.bool_]]:
    target_array = as_scores(target, f"{prefix}target_signals")
    reference_array = as_scores(reference, f"{prefix}reference_signals", ndim=2)
    if reference_array.shape[1] != target_array.size:
        raise ValueError(
            f"`{prefix}reference_signals` must have shape (references, records) with {target_array.size} records (one per target signal), got shape {reference_array.shape}"
        )
    return target_array, reference_array, check_membership(membership, reference_array.shape, f"{prefix}membership")


def _need(counts: NDArray[np.int64], minimum: int, side: str, option: str, name: str = "membership") -> None:
    short = np.flatnonzero(counts < minimum)
    if short.size:
        hint = "" if option == "" else f" ({option})"
        raise ValueError(
            f"`{name}` must put every record {side} of at least {minimum} reference model(s){hint}, "
            f"got {short.size} record(s) with fewer (first: record {int(short[0])}, {int(counts[short[0]])})"
        )


def _moments(signals: Floats, mask: NDArray[np.bool_], global_variance: bool, side: str) -> tuple[Floats, Floats, NDArray[np.int64]]:
    """Per record: mean of the masked signals, sum of their squared deviations from it, and their count."""
    counts = mask.sum(axis=0)
    minimum, option = (1, "") if global_variance else (2, "or set global_variance=True")
    _need(counts, minimum, side, option)
    mean = np.where(mask, signals, 0.0).sum(axis=0) / counts
    squares = np.where(mask, (signals - mean) ** 2, 0.0).sum(axis=0)
    return mean, squares, counts


def _pooled_std(squares: float, count: int, some_two: bool, side: str) -> float:
    """The global deviation: the residual variance pooled over all records, each around its own mean."""
    if not some_two:
        raise ValueError(
            f"`membership` must put some record {side} of at least 2 reference models: the global variance is pooled around each record's own mean"
        )
    return float(np.sqrt(squares / count))


def _gaussian_fit(signals: Floats, mask: NDArray[np.bool_], global_variance: bool, side: str, pooled: float | None = None) -> tuple[Floats, Floats]:
    """Per-record mean and standard deviation of the masked signals (maximum likelihood), or one pooled deviation.

    ``pooled`` is the global deviation when it was pooled over more records than these (chunks of records).
    """
    mean, squares, counts = _moments(signals, mask, global_variance, side)
    if global_variance:
        deviation = _pooled_std(float(squares.sum()), int(counts.sum()), bool((counts >= 2).any()), side) if pooled is None else pooled
        std = np.full(mean.shape, deviation)
    else:
        std = np.sqrt(squares / counts)
    if not (std > 0).all():
        raise ValueError(
            f"`reference_signals` must vary across the {side} reference models of each record (a Gaussian needs a spread); {int((std <= 0).sum())} record(s) have none"
        )
    return mean, std


def _lira(
    target: Floats, reference: Floats, member: NDArray[np.bool_], *, online: bool, global_variance: bool, pooled: dict[str, float] | None = None
) -> Floats:
    """LiRA's scores of checked arrays; ``pooled`` the global deviations by side ("IN", "OUT") when fitted on more records."""
    fit = pooled or {}
    mean_out, std_out = _gaussian_fit(reference, ~member, global_variance, "OUT", fit.get("OUT"))
    if not online:
        return np.asarray(stats.norm.logcdf((target - mean_out) / std_out), dtype=np.float64)
    mean_in, std_in = _gaussian_fit(reference, member, global_variance, "IN", fit.get("IN"))
    return np.asarray(stats.norm.logpdf(target, mean_in, std_in) - stats.norm.logpdf(target, mean_out, std_out), dtype=np.float64)


def loss_scores(target_signals: ArrayLike) -> Floats:
    """The LOSS baseline: minus the cross-entropy loss, log p = −log(1 + e^(−φ)), of the target's own signal.

    >>> loss_scores([0.0]).tolist()  # p = 1/2
    [-0.6931471805599453]
    """
    return np.asarray(special.log_expit(as_scores(target_signals, "target_signals")), dtype=np.float64)


def lira_online_scores(target_signals: ArrayLike, reference_signals: ArrayLike, membership: ArrayLike, *, global_variance: bool = False) -> Floats:
    """Online LiRA: log N(φ; μ_in, σ²_in) − log N(φ; μ_out, σ²_out), Gaussians fitted per record.

    Each record needs at least 2 IN and 2 OUT references (1 with
    ``global_variance``, where one pooled σ_in and one σ_out serve all records).
    """
    return _lira(*_check(target_signals, reference_signals, membership), online=True, global_variance=global_variance)


def lira_offline_scores(target_signals: ArrayLike, reference_signals: ArrayLike, membership: ArrayLike, *, global_variance: bool = False) -> Floats:
    """Offline LiRA, the one-sided test: log Pr[Z <= φ] with Z ~ N(μ_out, σ²_out), fitted to the OUT references only.

    Each record needs at least 2 OUT references (1 with ``global_variance``).
    """
    return _lira(*_check(target_signals, reference_signals, membership), online=False, global_variance=global_variance)


def _log_mean(log_values: Floats, mask: NDArray[np.bool_], side: str, name: str) -> Floats:
    """log of the mean of exp(log_values) over the masked rows of each column."""
    counts = mask.sum(axis=0)
    _need(counts, 1, side, "", name)
    return np.asarray(special.logsumexp(np.where(mask, log_values, -np.inf), axis=0) - np.log(counts), dtype=np.float64)


def _log_prior(reference: Floats, member: NDArray[np.bool_], offline_a: float | None, name: str) -> Floats:
    """log Pr(x) from the reference models: online ½(mean IN + mean OUT), offline ½((1 + a) mean OUT + (1 − a))."""
    log_p = special.log_expit(reference)
    log_out = _log_mean(log_p, ~member, "OUT", name)
    if offline_a is None:
        return np.asarray(np.logaddexp(_log_mean(log_p, member, "IN", name), log_out) - np.log(2.0), dtype=np.float64)
    with np.errstate(divide="ignore"):  # a = 1: the constant term is log 0
        constant = np.log1p(-offline_a)
    return np.asarray(np.logaddexp(np.log1p(offline_a) + log_out, constant) - np.log(2.0), dtype=np.float64)


def rmia_scores(
    target_signals: ArrayLike,
    reference_signals: ArrayLike,
    membership: ArrayLike,
    population_target_signals: ArrayLike,
    population_reference_signals: ArrayLike,
    population_membership: ArrayLike | None = None,
    *,
    gamma: float = 1.0,
    offline_a: float | None = None,
) -> Floats:
    """RMIA: the fraction of population samples z with LR(x, z) >= ``gamma``.

    LR(x, z) = [Pr(x|θ)/Pr(x)] / [Pr(z|θ)/Pr(z)], in the log domain.
    ``population_*`` are the signals (m,) and (k, m) of m population samples
    z on the target and the same k references, and their membership (None:
    OUT of every reference, which needs ``offline_a``). ``offline_a`` None is
    the online attack (every record and z needs an IN and an OUT reference);
    a in [0, 1] the offline one, from OUT references only.

    Returns scores in [0, 1]: a score s means x dominates a fraction s of z.
    """
    target, reference, member = _check(target_signals, reference_signals, membership)
    z_member_input = np.zeros(np.shape(population_reference_signals), dtype=bool) if population_membership is None else population_membership
    z_target, z_reference, z_member = _check(population_target_signals, population_reference_signals, z_member_input, "population_")
    if z_reference.shape[0] != reference.shape[0]:
        raise ValueError(f"`population_reference_signals` must come from the same {reference.shape[0]} reference models, got {z_reference.shape[0]}")
    log_gamma = np.log(check_positive(gamma, "gamma"))
    if offline_a is not None:
        offline_a = check_fraction(offline_a, "offline_a")
    elif population_membership is None:
        raise ValueError("`population_membership` is needed for online RMIA (offline_a=None): Pr(z) averages IN and OUT references")
    ratio_z = np.sort(_rmia_ratio(z_target, z_reference, z_member, offline_a, "population_membership"))
    return _dominated(_rmia_ratio(target, reference, member, offline_a, "membership"), ratio_z, log_gamma)


def rmia_log_ratios(target_signals: ArrayLike, reference_signals: ArrayLike, membership: ArrayLike, *, offline_a: float | None = None) -> Floats:
    """RMIA's statistic of each record, r(x) = log Pr(x|θ) − log Pr(x): the score at any fixed γ is a non-decreasing function of it.

    ``offline_a`` None is online RMIA (Pr(x) from IN and OUT references),
    a in [0, 1] the offline one. Ranking by r(x) is ranking by
    :func:`rmia_scores` with every tie broken by r(x) (the module docstring).

    >>> membership = [[True, False], [True, False], [False, True], [False, True]]
    >>> r = rmia_log_ratios([4.0, -1.0], [[3.0, 0.0], [5.0, -2.0], [0.0, 2.0], [-2.0, 4.0]], membership)
    >>> bool(r[0] > r[1])
    True
    """
    target, reference, member = _check(target_signals, reference_signals, membership)
    if offline_a is not None:
        offline_a = check_fraction(offline_a, "offline_a")
    return _rmia_ratio(target, reference, member, offline_a, "membership")


def rmia_fractions_left_out(ratio_z: ArrayLike, *, gamma: float = 1.0) -> Floats:
    """Each population sample's RMIA score against the others only: the fraction of the other m − 1 samples it dominates.

    A sample z is then scored by an RMIA that does not use it (leave-one-out
    cross-fitting), so the population samples are evaluated as non-members
    like any other record. ``ratio_z`` are the samples' log ratios r(z)
    (:func:`rmia_log_ratios`); at least 2 samples.

    >>> rmia_fractions_left_out([0.0, 1.0, 2.0]).tolist()  # z = 0 dominates neither other, z = 2 both
    [0.0, 0.5, 1.0]
    """
    ratios = as_scores(ratio_z, "ratio_z")
    if ratios.size < 2:
        raise ValueError(f"`ratio_z` must hold at least 2 population samples to score each against the others, got {ratios.size}")
    log_gamma = float(np.log(check_positive(gamma, "gamma")))
    dominated = np.searchsorted(np.sort(ratios), ratios - log_gamma, side="right")
    # z dominates itself (LR(z, z) = 1 >= γ) exactly when γ <= 1: take that one out
    return np.asarray((dominated - (1 if log_gamma <= 0.0 else 0)) / (ratios.size - 1), dtype=np.float64)


def rmia_fractions(ratio_x: ArrayLike, ratio_z: ArrayLike, z_of: ArrayLike, *, gamma: float = 1.0) -> Floats:
    """RMIA's fraction of z dominated, from the log ratios: against every z for a record, against the other z for a z.

    ``z_of`` is, per record, its index among the z (-1 for a record that is
    not one).

    >>> rmia_fractions([1.5, 0.0, 2.0], [0.0, 2.0], [-1, 0, 1]).tolist()  # a record, then the two z
    [0.5, 0.0, 1.0]
    """
    fractions = _dominated(as_scores(ratio_x, "ratio_x"), np.sort(as_scores(ratio_z, "ratio_z")), float(np.log(check_positive(gamma, "gamma"))))
    z_index = np.asarray(z_of, dtype=np.intp)
    is_z = z_index >= 0
    if is_z.any():  # each z scored by an RMIA that does not use it
        fractions[is_z] = rmia_fractions_left_out(ratio_z, gamma=gamma)[z_index[is_z]]
    return fractions


def _rmia_ratio(target: Floats, reference: Floats, member: NDArray[np.bool_], offline_a: float | None, name: str) -> Floats:
    """log Pr(x|θ) − log Pr(x) of each record: the part of LR(x, z) that is x's alone."""
    return np.asarray(special.log_expit(target) - _log_prior(reference, member, offline_a, name), dtype=np.float64)


def _dominated(ratio_x: Floats, sorted_ratio_z: Floats, log_gamma: float) -> Floats:
    """The fraction of population samples each x dominates: LR(x, z) >= γ  <=>  ratio_z <= ratio_x − log γ."""
    dominated = np.searchsorted(sorted_ratio_z, ratio_x - log_gamma, side="right")
    return np.asarray(dominated / sorted_ratio_z.size, dtype=np.float64)
