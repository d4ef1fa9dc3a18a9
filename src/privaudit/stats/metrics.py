"""Membership-inference metrics: ROC curve, AUC, TPR at FPR, precision at recall.

Score convention: a higher score means "more likely in"; the attack predicts
"in" when score >= t. These are in-sample statistics of the observed scores,
not confidence bounds; for bounds on ε use :func:`privaudit.epsilon_lower_bound`.

Conventions (the conservative readings):

* Tied scores form one ROC point: a threshold cannot separate them, and no
  randomised threshold is used to interpolate between points. TPR at a target
  FPR is therefore read off the ROC *step* function (never the convex hull or
  a linear interpolation), which can only report less than those would.
* The AUC counts a tie between an in-score and an out-score as ½, the area
  under the curve with ties drawn as diagonal segments (Mann–Whitney U / n m).
"""

from __future__ import annotations

import dataclasses
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special  # Φ⁻¹ without importing scipy.stats (a third of a second)

from .._core.results import Result
from .._core.validation import as_scores, check_count, check_probability

__all__ = ["RocCurve", "auc_null_margin", "precision_at_recall", "roc_auc", "roc_curve", "tpr_at_fpr"]


@dataclasses.dataclass(frozen=True)
class RocCurve(Result):
    """ROC points for thresholds in decreasing order, from (0, 0) at +inf to (1, 1)."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray


def _validate(in_scores: ArrayLike, out_scores: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return as_scores(in_scores, "in_scores"), as_scores(out_scores, "out_scores")


def _roc(in_scores: NDArray[np.float64], out_scores: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    thresholds = np.unique(np.concatenate([in_scores, out_scores]))[::-1]
    # #scores >= t, for each distinct t, by binary search on the sorted scores
    true_positives = in_scores.size - np.searchsorted(np.sort(in_scores), thresholds, side="left")
    false_positives = out_scores.size - np.searchsorted(np.sort(out_scores), thresholds, side="left")
    fpr = np.r_[0.0, false_positives / out_scores.size]
    tpr = np.r_[0.0, true_positives / in_scores.size]
    return fpr, tpr, np.r_[np.inf, thresholds]


def _roc_at_targets(
    in_scores: ArrayLike, out_scores: ArrayLike, values: ArrayLike, name: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int, int]:
    """Validated scores and targets, and the ROC points: (targets, fpr, tpr, n_in, n_out)."""
    in_scores_array, out_scores_array = _validate(in_scores, out_scores)
    targets = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if targets.ndim != 1 or targets.size == 0 or np.any(~np.isfinite(targets)) or np.any((targets < 0) | (targets > 1)):
        raise ValueError(f"`{name}` must be one or more numbers in [0, 1], got {values!r}")
    fprs, tprs, _ = _roc(in_scores_array, out_scores_array)
    return targets, fprs, tprs, in_scores_array.size, out_scores_array.size


def roc_curve(in_scores: ArrayLike, out_scores: ArrayLike) -> RocCurve:
    """ROC curve of the attack "in iff score >= t", one point per distinct score.

    Parameters
    ----------
    in_scores, out_scores : array_like
        Finite 1-D scores of members and non-members; higher means "in".

    Returns
    -------
    RocCurve
        ``fpr``, ``tpr`` and ``thresholds`` (strictly decreasing, starting at
        +inf where the curve is at (0, 0), ending at the lowest score where it
        is at (1, 1)); like scikit-learn's ``roc_curve`` with
        ``drop_intermediate=False``.

    Examples
    --------
    >>> curve = roc_curve([3.0, 2.0], [1.0, 2.0])
    >>> curve.fpr.tolist(), curve.tpr.tolist(), curve.thresholds.tolist()
    ([0.0, 0.0, 0.5, 1.0], [0.0, 0.5, 1.0, 1.0], [inf, 3.0, 2.0, 1.0])
    """
    fpr, tpr, thresholds = _roc(*_validate(in_scores, out_scores))
    return RocCurve(fpr=fpr, tpr=tpr, thresholds=thresholds)


def roc_auc(in_scores: ArrayLike, out_scores: ArrayLike) -> float:
    """Area under the ROC curve: P(in-score > out-score) + ½ P(tie), by the rank-sum formula.

    Parameters
    ----------
    in_scores, out_scores : array_like
        Finite 1-D scores of members and non-members; higher means "in".

    Returns
    -------
    float
        The empirical AUC in [0, 1], the rank-sum statistic counted by binary search in O(n log n).

    Examples
    --------
    >>> roc_auc([3.0, 2.0], [1.0, 2.0])  # pairs: 3>1, 3>2, 2>1, 2=2 -> 3.5/4
    0.875
    """
    in_scores, out_scores = _validate(in_scores, out_scores)
    # U = Σ over in-scores of the out-scores below it, ties counting ½: the rank-sum statistic, exact in
    # integers and halves, counted with numpy rather than scipy.stats.rankdata (whose import is slow)
    out_sorted = np.sort(out_scores)
    below = np.searchsorted(out_sorted, in_scores, side="left")
    ties = np.searchsorted(out_sorted, in_scores, side="right") - below
    u = float(below.sum()) + 0.5 * float(ties.sum())
    return float(u / (in_scores.size * out_scores.size))


def auc_null_margin(num_in: int, num_out: int, confidence: float = 0.95) -> float:
    """Half-width of the AUC's two-sided normal interval under no signal, at ``confidence``.

    With no membership signal and no ties the Mann–Whitney AUC of ``num_in``
    in-scores and ``num_out`` out-scores has mean ½ and variance
    (n₁ + n₀ + 1)/(12 n₁ n₀) (Hanley and McNeil, 1982); the margin is
    z · √variance with z = Φ⁻¹(1 - (1 - c)/2). An AUC within it of ½ is no
    evidence of a signal. It is a yardstick for warnings, not a bound.

    Parameters
    ----------
    num_in, num_out : int >= 1
        The members' and the non-members' counts.
    confidence : float in (0, 1)

    Examples
    --------
    >>> import math
    >>> from scipy.stats import norm
    >>> margin = auc_null_margin(100, 100)
    >>> bool(abs(margin - norm.isf(0.025) * math.sqrt(201 / (12 * 100 * 100))) < 1e-12)
    True
    >>> auc_null_margin(0, 100)
    Traceback (most recent call last):
    ...
    ValueError: `num_in` must be an integer in [1, inf), got 0
    """
    n_in = check_count(num_in, "num_in", minimum=1)
    n_out = check_count(num_out, "num_out", minimum=1)
    confidence = check_probability(confidence, "confidence")
    variance = (n_in + n_out + 1) / (12.0 * n_in * n_out)
    return float(-special.ndtri((1.0 - confidence) / 2.0) * np.sqrt(variance))


def tpr_at_fpr(in_scores: ArrayLike, out_scores: ArrayLike, fpr: ArrayLike = (0.001, 0.01, 0.1)) -> NDArray[np.float64]:
    """Highest TPR among thresholds whose empirical FPR is <= each target.

    The reading is on the ROC step function (no interpolation between points,
    ties never split), so it is an empirical, in-sample statistic of these
    scores, not a bound on the attack's true TPR.

    Parameters
    ----------
    in_scores, out_scores : array_like
        Finite 1-D scores of members and non-members; higher means "in".
    fpr : float or sequence of float, default (0.001, 0.01, 0.1)
        Target false-positive rates in [0, 1].

    Returns
    -------
    numpy.ndarray
        One TPR per target (0 where no threshold but +inf meets the target).

    Examples
    --------
    >>> tpr_at_fpr([3.0, 2.0], [1.0, 2.0], [0.0, 0.5])
    array([0.5, 1. ])
    """
    targets, fprs, tprs, _, _ = _roc_at_targets(in_scores, out_scores, fpr, "fpr")
    # fpr is non-decreasing along the curve: the last point with fpr <= target has the largest tpr
    last = np.searchsorted(fprs, targets, side="right") - 1
    return cast("NDArray[np.float64]", tprs[last])


def precision_at_recall(in_scores: ArrayLike, out_scores: ArrayLike, recall: ArrayLike = (0.1, 0.5, 0.9)) -> NDArray[np.float64]:
    """Highest precision among thresholds whose recall (TPR) is >= each target.

    Precision is TP / (TP + FP) on these scores, so it depends on the ratio of
    members to non-members in the sample; like :func:`tpr_at_fpr` it is an
    in-sample statistic, not a bound.

    Parameters
    ----------
    in_scores, out_scores : array_like
        Finite 1-D scores of members and non-members; higher means "in".
    recall : float or sequence of float, default (0.1, 0.5, 0.9)
        Target recalls in [0, 1]; recall 1 is always met by the lowest score.

    Returns
    -------
    numpy.ndarray
        One precision per target.

    Examples
    --------
    >>> precision_at_recall([3.0, 2.0], [1.0, 2.0], [0.5, 1.0])
    array([1.        , 0.66666667])
    """
    targets, fprs, tprs, n_in, n_out = _roc_at_targets(in_scores, out_scores, recall, "recall")
    tp, fp = tprs[1:] * n_in, fprs[1:] * n_out
    precision = tp / np.maximum(tp + fp, 1.0)
    recall_values = tprs[1:]
    # best precision among points at or beyond each recall: suffix maximum
    suffix_best = np.maximum.accumulate(precision[::-1])[::-1]
    first = np.searchsorted(recall_values, targets, side="left")
    return cast("NDArray[np.float64]", suffix_best[np.minimum(first, recall_values.size - 1)])
