"""LOSS, LiRA and RMIA on augmented queries: each record queried as A augmented views (mirror, shifts), signals of shape (A, n).

Readings of the papers (each where the text admits more than one):

* LiRA (Carlini et al. 2022, §VI "querying augmentations"): the target's
  signals on the A views of a record are one observation of a multivariate
  Gaussian with a *diagonal* covariance, fitted per record and view from
  the references (the paper's choice with few references: no correlations
  are estimated). Its log-likelihood ratio is the sum over views of the
  per-view univariate ratios; the score is their *mean* (the sum over A, the
  same ranking, on the scale of one query). With ``global_variance``, one
  σ_in and one σ_out are pooled per view. Offline LiRA is the mean over views
  of the one-sided log Pr[Z <= φ_a].
* RMIA (Zarifzadeh et al. 2024, augmented queries): Pr(x|θ) is the
  target's probability of the true class *averaged over the views* of x, and
  Pr(x) the same average on each reference model, so the likelihood ratio is
  formed from view-averaged probabilities (for x and for every z alike).
  :func:`view_averaged_signal` turns A signals into the φ of the averaged
  probability, which :func:`privaudit.stats.mia.rmia_scores` then reads.
* LOSS: the mean over views of log p (the average log-likelihood).

>>> target = np.array([[4.0, -1.0], [4.0, -1.0]])  # two identical views: the same scores as one query
>>> reference = np.array([[[3.0, 0.0]] * 2, [[5.0, -2.0]] * 2, [[0.0, 2.0]] * 2, [[-2.0, 4.0]] * 2])
>>> membership = [[True, False], [True, False], [False, True], [False, True]]
>>> lira_online_augmented(target, reference, membership).tolist()
[12.5, -8.0]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._core.validation import as_real_array
from .mia import lira_offline_scores, lira_online_scores, loss_scores

__all__ = ["lira_offline_augmented", "lira_online_augmented", "loss_augmented", "view_averaged_signal"]

Floats = NDArray[np.float64]


def _views(signals: ArrayLike, name: str, ndim: int) -> Floats:
    values = as_real_array(signals, name)
    if values.ndim != ndim or values.shape[-2] < 1:
        shape = "(views, records)" if ndim == 2 else "(references, views, records)"
        raise ValueError(f"`{name}` must have shape {shape}, got {values.shape}")
    return np.asarray(values, dtype=np.float64)


def _paired(target_signals: ArrayLike, reference_signals: ArrayLike) -> tuple[Floats, Floats]:
    """The target's (A, n) and the references' (k, A, n) view signals, checked to match."""
    target = _views(target_signals, "target_signals", 2)
    reference = _views(reference_signals, "reference_signals", 3)
    if reference.shape[1:] != target.shape:
        raise ValueError(f"`reference_signals` must have shape (references, {target.shape[0]}, {target.shape[1]}), got {reference.shape}")
    return target, reference


def view_averaged_signal(signals: ArrayLike) -> Floats:
    """φ of the view-averaged probability: log p̄ − log(1 − p̄), p̄ the mean over axis −2 of 1/(1 + e^(−φ)), in the log domain.

    ``signals`` has shape (..., views, records); the result drops the views axis.

    >>> view_averaged_signal([[0.0], [np.log(3.0)]]).round(6).tolist()  # p = 1/2 and 3/4: mean 5/8, φ = log(5/3)
    [0.510826]
    """
    values = as_real_array(signals, "signals")
    if values.ndim < 2:
        raise ValueError(f"`signals` must have shape (..., views, records), got {values.shape}")
    views = values.shape[-2]
    log_p = special.logsumexp(special.log_expit(values), axis=-2) - np.log(views)
    log_q = special.logsumexp(special.log_expit(-values), axis=-2) - np.log(views)
    return np.asarray(log_p - log_q, dtype=np.float64)


def lira_online_augmented(target_signals: ArrayLike, reference_signals: ArrayLike, membership: ArrayLike, *, global_variance: bool = False) -> Floats:
    """Online LiRA on A views: the mean over views of the per-view Gaussian log-likelihood ratios (a diagonal-covariance Gaussian per record).

    ``target_signals`` (A, n), ``reference_signals`` (k, A, n), ``membership`` (k, n).
    """
    target, reference = _paired(target_signals, reference_signals)
    per_view = [lira_online_scores(target[a], reference[:, a], membership, global_variance=global_variance) for a in range(target.shape[0])]
    return np.asarray(np.mean(per_view, axis=0), dtype=np.float64)


def lira_offline_augmented(target_signals: ArrayLike, reference_signals: ArrayLike, membership: ArrayLike, *, global_variance: bool = False) -> Floats:
    """Offline LiRA on A views: the mean over views of log Pr[Z <= φ_a], Z fitted per view to the OUT references."""
    target, reference = _paired(target_signals, reference_signals)
    per_view = [lira_offline_scores(target[a], reference[:, a], membership, global_variance=global_variance) for a in range(target.shape[0])]
    return np.asarray(np.mean(per_view, axis=0), dtype=np.float64)


def loss_augmented(target_signals: ArrayLike) -> Floats:
    """LOSS on A views: the mean over views of log p, the average log-likelihood of the true class.

    >>> loss_augmented([[0.0], [0.0]]).tolist()
    [-0.6931471805599453]
    """
    target = _views(target_signals, "target_signals", 2)
    return np.asarray(np.mean([loss_scores(view) for view in target], axis=0), dtype=np.float64)
