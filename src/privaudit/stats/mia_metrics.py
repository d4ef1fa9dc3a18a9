"""What an attack's per-record scores achieve: AUC, and TPR at low FPR with confidence intervals.

The ROC is read as :mod:`privaudit.stats.metrics` reads it (step function,
ties never split). Each TPR comes with a two-sided Clopper–Pearson interval
(:func:`privaudit.stats.intervals.binomial_interval`) on the true-positive
count at the threshold that meets the FPR target. That threshold is chosen on
these scores, so the interval covers the TPR of *that* threshold, whose own
FPR is in-sample: these are attack statistics, not bounds on ε.

>>> metrics = attack_metrics([3.0, 2.0, 1.5, 0.0], [True, True, False, False], fpr=(0.0, 0.5))
>>> metrics.auc, metrics.tpr.tolist()
(1.0, [1.0, 1.0])
>>> [round(float(low), 3) for low in metrics.tpr_low]
[0.158, 0.158]
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._core.results import Result
from .._core.validation import as_scores, check_probability
from .intervals import binomial_interval
from .metrics import roc_auc, roc_curve, tpr_at_fpr

__all__ = ["DEFAULT_FPR", "AttackMetrics", "attack_metrics", "roc_points", "supported_fpr"]

#: The FPR targets both papers report.
DEFAULT_FPR = (0.0, 0.001, 0.01)


def supported_fpr(fpr: float, num_out: int) -> bool:
    """Whether ``num_out`` non-members can show an FPR of ``fpr``: 0 always, else at least 1/``fpr`` of them.

    Below that, the TPR "at 0.1% FPR" of 500 non-members is the TPR at zero
    false positives, a different statistic under the wrong name.

    >>> supported_fpr(0.001, 999), supported_fpr(0.001, 1000), supported_fpr(0.0, 3)
    (False, True, True)
    """
    return fpr == 0.0 or num_out >= math.ceil(1.0 / fpr - 1e-9)


@dataclasses.dataclass(frozen=True)
class AttackMetrics(Result):
    """AUC and TPR at each FPR target, with ``confidence`` intervals ``[tpr_low, tpr_high]``; in-sample statistics."""

    auc: float
    fpr: np.ndarray
    tpr: np.ndarray
    tpr_low: np.ndarray
    tpr_high: np.ndarray
    confidence: float
    num_in: int
    num_out: int
    kind: str = "statistic"


def attack_metrics(scores: ArrayLike, is_member: Any, *, fpr: ArrayLike = DEFAULT_FPR, confidence: float = 0.95) -> AttackMetrics:
    """AUC and TPR at ``fpr`` of the scores (higher = member) against the true membership.

    Parameters
    ----------
    scores : array_like, shape (n,)
        One finite score per record.
    is_member : array_like of bool, shape (n,)
        True for the target's members; both sides must be present.
    fpr : float or sequence of float
        FPR targets in [0, 1].
    confidence : float
        Level of the two-sided Clopper–Pearson intervals on each TPR.
    """
    values = as_scores(scores, "scores")
    member = np.asarray(is_member)
    if member.shape != values.shape or member.dtype != bool:
        raise ValueError(f"`is_member` must be {values.size} booleans, one per score, got shape {member.shape} of dtype {member.dtype}")
    num_in = int(member.sum())
    if num_in == 0 or num_in == member.size:
        raise ValueError(f"`is_member` must mark members and non-members, got {num_in} of {member.size} members")
    confidence = check_probability(confidence, "confidence")
    in_scores, out_scores = values[member], values[~member]
    tpr = tpr_at_fpr(in_scores, out_scores, fpr)
    true_positives = np.rint(tpr * num_in).astype(np.int64)
    low, high = binomial_interval(true_positives, np.full_like(true_positives, num_in), confidence=confidence)
    return AttackMetrics(
        auc=roc_auc(in_scores, out_scores),
        fpr=np.atleast_1d(np.asarray(fpr, dtype=np.float64)),
        tpr=tpr,
        tpr_low=np.asarray(low, dtype=np.float64),
        tpr_high=np.asarray(high, dtype=np.float64),
        confidence=confidence,
        num_in=num_in,
        num_out=int(member.size - num_in),
    )


def roc_points(scores: ArrayLike, is_member: Any) -> tuple[np.ndarray, np.ndarray]:
    """(fpr, tpr) of the ROC step curve, for drawing it log-log.

    >>> roc_points([2.0, 1.0], [True, False])[1].tolist()
    [0.0, 1.0, 1.0]
    """
    values = as_scores(scores, "scores")
    member = np.asarray(is_member, dtype=bool)
    curve = roc_curve(values[member], values[~member])
    return curve.fpr, curve.tpr
