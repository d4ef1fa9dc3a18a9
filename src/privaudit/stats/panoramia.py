"""PANORAMIA's statistics (Kazmi et al. §4): auditing with generated non-members.

The audit set holds m examples, each a real training member (s = 1) or a
generated one (s = 0). A baseline classifier b, which never sees the model,
and a membership-inference classifier a, which does, score each example.
Predicting "member" for the r highest scores, with tp of them real:

* if the generator is c-close, tp is dominated by Binomial(r, e^c/(1 + e^c))
  for the baseline (Prop. 1), so its precision lower-bounds c;
* if moreover the model is ε-DP, the same holds for the MIA with c + ε
  (Prop. 2).

c_lb and {c+ε}_lb are the largest values each test rejects, each at level
β/2 (the union bound of Corollary 1). ε̃ = max(0, {c+ε}_lb - c_lb) is *not* a
lower bound on ε: it is an estimate, meaningful when c_lb is tight.

Conservative choices:

* the binomial tail is exact (a Clopper–Pearson bound on precision); the
  paper's readable Hoeffding form is offered for comparison;
* the paper takes, for each test, the recall level with the highest bound on
  the same data. The default instead tests ``num_recall_levels`` prediction
  counts r fixed in advance (geometric from 1 to m), each at β/(2k), so both
  bounds stay valid; ``correction="none"`` reproduces the paper's practice and
  flags the result ``valid=False``.
"""

from __future__ import annotations

import dataclasses
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from .._core.results import Result
from .._core.validation import as_scores, check_choice, check_count, check_probability

__all__ = ["PanoramiaResult", "RealNonMemberBound", "panoramia_bounds", "privacy_recall_curve", "real_non_member_bound"]

METHODS = ("binomial", "hoeffding")
CORRECTIONS = ("bonferroni", "none")


@dataclasses.dataclass(frozen=True)
class PanoramiaResult(Result):
    """c_lb and {c+ε}_lb (lower bounds when ``valid``), and the estimate ε̃."""

    c_lb: float
    c_plus_epsilon_lb: float
    epsilon_tilde: float
    confidence: float
    method: str
    correction: str
    num_tests: int
    baseline_num_predictions: int
    baseline_precision: float
    baseline_recall: float
    mia_num_predictions: int
    mia_precision: float
    mia_recall: float
    num_members: int
    num_generated: int
    valid: bool
    epsilon_tilde_kind: str = "estimate"


def _precision_lower_bounds(true_positives: ArrayLike, predictions: ArrayLike, alpha: float, method: str) -> NDArray[np.float64]:
    """Lower bound on the success probability p from tp of r, rejecting with level alpha."""
    tp = np.asarray(true_positives, dtype=np.float64)
    r = np.asarray(predictions, dtype=np.float64)
    if method == "hoeffding":
        return cast("NDArray[np.float64]", tp / r - np.sqrt(np.log(1.0 / alpha) / (2.0 * r)))
    # largest p with P[Bin(r, p) >= tp] <= alpha: the Clopper–Pearson lower bound
    with np.errstate(invalid="ignore"):
        bound = stats.beta.ppf(alpha, tp, r - tp + 1.0)
    return np.where(tp > 0, bound, 0.0)


def _best_test(scores: NDArray[np.float64], member: NDArray[np.bool_], counts: NDArray[np.int64], alpha: float, method: str) -> tuple[float, int, float, float]:
    ordered = member[np.argsort(-scores, kind="stable")]
    true_positives = np.cumsum(ordered)[counts - 1]
    bounds = _precision_lower_bounds(true_positives, counts, alpha, method)
    with np.errstate(divide="ignore"):
        levels = np.maximum(special.logit(np.clip(bounds, 0.5, 1.0)), 0.0)  # p <= ½ rejects nothing
    best = int(np.argmax(levels))
    return float(levels[best]), int(counts[best]), float(true_positives[best] / counts[best]), float(true_positives[best])


def panoramia_bounds(
    baseline_scores: ArrayLike,
    mia_scores: ArrayLike,
    is_member: ArrayLike,
    *,
    confidence: float = 0.95,
    method: str = "binomial",
    correction: str = "bonferroni",
    num_recall_levels: int = 16,
) -> PanoramiaResult:
    """PANORAMIA's c_lb, {c+ε}_lb and ε̃ from baseline and MIA scores on one audit set.

    Parameters
    ----------
    baseline_scores, mia_scores : 1-D arrays of length m
        Membership scores (higher = "real member") of the baseline b and the MIA a.
    is_member : 1-D bool array of length m
        True for real members, False for generated non-members.
    confidence : float in (0, 1)
        1 - β; each of the two tests runs at β/2.
    method : {"binomial", "hoeffding"}
    correction : {"bonferroni", "none"}
    num_recall_levels : int >= 1
        How many prediction counts r are tried.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(4000) < 0.5
    >>> baseline = member * 0.5 + rng.normal(size=4000)
    >>> mia = member * 2.0 + rng.normal(size=4000)
    >>> result = panoramia_bounds(baseline, mia, member)
    >>> bool(result.c_plus_epsilon_lb > result.c_lb), result.valid, result.epsilon_tilde_kind
    (True, True, 'estimate')
    """
    baseline = as_scores(baseline_scores, "baseline_scores")
    mia = as_scores(mia_scores, "mia_scores")
    member = np.asarray(is_member)
    if mia.shape != baseline.shape:
        raise ValueError(f"`mia_scores` must have the shape of `baseline_scores` {baseline.shape}, got {mia.shape}")
    if member.shape != baseline.shape or member.dtype.kind not in "biuf" or not (member.dtype == bool or np.isin(member, (0, 1)).all()):
        raise ValueError(f"`is_member` must be a boolean array of shape {baseline.shape}")
    member = _check_both_classes(member.astype(bool))
    confidence = check_probability(confidence, "confidence")
    method = check_choice(method, "method", METHODS)
    correction = check_choice(correction, "correction", CORRECTIONS)
    m = baseline.size
    num_recall_levels = check_count(num_recall_levels, "num_recall_levels", minimum=1)

    counts = _recall_levels(m, num_recall_levels)
    if correction == "none":
        counts = np.arange(1, m + 1)
    tests = counts.size if correction == "bonferroni" else 1
    alpha = (1.0 - confidence) / 2.0 / tests
    c_lb, b_r, b_precision, b_tp = _best_test(baseline, member, counts, alpha, method)
    ce_lb, a_r, a_precision, a_tp = _best_test(mia, member, counts, alpha, method)
    num_members = int(member.sum())
    return PanoramiaResult(
        c_lb=c_lb,
        c_plus_epsilon_lb=ce_lb,
        epsilon_tilde=max(0.0, ce_lb - c_lb),
        confidence=confidence,
        method=method,
        correction=correction,
        num_tests=int(counts.size),
        baseline_num_predictions=b_r,
        baseline_precision=b_precision,
        baseline_recall=b_tp / max(num_members, 1),
        mia_num_predictions=a_r,
        mia_precision=a_precision,
        mia_recall=a_tp / max(num_members, 1),
        num_members=num_members,
        num_generated=m - num_members,
        valid=correction == "bonferroni",
    )


def _recall_levels(m: int, num_recall_levels: int) -> np.ndarray:
    return np.unique(np.geomspace(1, m, min(num_recall_levels, m)).round().astype(np.int64))


def _check_both_classes(member: np.ndarray) -> np.ndarray:
    # with one class only every prediction is right (or wrong) whatever the scores: no test
    if member.all() or not member.any():
        kind = "generated (or real non-) members" if member.all() else "real members"
        raise ValueError(f"`is_member` must mark members (True) and non-members (False), got no {kind}")
    return member


def _check_scores_and_members(scores: ArrayLike, is_member: ArrayLike, name: str) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    values = as_scores(scores, name)
    member = np.asarray(is_member)
    if member.shape != values.shape or member.dtype.kind not in "biuf" or not (member.dtype == bool or np.isin(member, (0, 1)).all()):
        raise ValueError(f"`is_member` must be a boolean array of shape {values.shape}")
    return values, _check_both_classes(member.astype(bool))


def privacy_recall_curve(scores: ArrayLike, is_member: ArrayLike, *, alpha: float, method: str = "binomial") -> dict[str, NDArray[np.float64]]:
    """Precision, recall and the logit of the precision lower bound at every prediction count r = 1..m.

    The bound at each r is the one-sided test of level ``alpha`` (for the
    figures: pass the level each reported test used, β/(2k)). Values are in
    the units of c (baseline) or c + ε (MIA).

    >>> curve = privacy_recall_curve([3.0, 2.0, 1.0, 0.0], [True, True, False, False], alpha=0.05)
    >>> curve["precision"].tolist(), curve["recall"].tolist()
    ([1.0, 1.0, 0.6666666666666666, 0.5], [0.5, 1.0, 1.0, 1.0])
    >>> bool(np.isclose(curve["bound"][1], special.logit(0.05 ** 0.5)))  # 2 of 2 right: P[Bin(2, p) >= 2] = p²
    True
    """
    values, member = _check_scores_and_members(scores, is_member, "scores")
    alpha = check_probability(alpha, "alpha")
    method = check_choice(method, "method", METHODS)
    counts = np.arange(1, values.size + 1)
    true_positives = np.cumsum(member[np.argsort(-values, kind="stable")])
    bounds = _precision_lower_bounds(true_positives, counts, alpha, method)
    with np.errstate(divide="ignore"):
        logits = special.logit(np.clip(bounds, 0.0, 1.0))
    return {
        "num_predictions": counts,
        "precision": true_positives / counts,
        "recall": true_positives / max(int(member.sum()), 1),
        "bound": logits,
    }


@dataclasses.dataclass(frozen=True)
class RealNonMemberBound(Result):
    """RM;RN: ε lower bound from real members vs real non-members (c = 0), one-sided as PANORAMIA."""

    epsilon: float
    confidence: float
    method: str
    num_tests: int
    num_predictions: int
    precision: float
    recall: float
    num_members: int
    num_non_members: int
    valid: bool = True
    kind: str = "lower bound"


def real_non_member_bound(
    mia_scores: ArrayLike,
    is_member: ArrayLike,
    *,
    confidence: float = 0.95,
    method: str = "binomial",
    num_recall_levels: int = 16,
) -> RealNonMemberBound:
    """PANORAMIA's MIA test with real non-members (RM;RN): the baseline's c is 0, so {c+ε}_lb bounds ε.

    With non-members drawn from the members' distribution, no baseline is
    needed and the whole level 1 - ``confidence`` goes to the MIA's test,
    Bonferroni-corrected over the same geometric prediction counts as
    :func:`panoramia_bounds`. Valid only if membership s was drawn at random
    independently of the model (as in Definition 2).

    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(4000) < 0.5
    >>> result = real_non_member_bound(member * 2.0 + rng.normal(size=4000), member)
    >>> bool(result.epsilon > 1.0), result.kind
    (True, 'lower bound')
    """
    values, member = _check_scores_and_members(mia_scores, is_member, "mia_scores")
    confidence = check_probability(confidence, "confidence")
    method = check_choice(method, "method", METHODS)
    num_recall_levels = check_count(num_recall_levels, "num_recall_levels", minimum=1)
    counts = _recall_levels(values.size, num_recall_levels)
    alpha = (1.0 - confidence) / counts.size
    epsilon, r, precision, tp = _best_test(values, member, counts, alpha, method)
    num_members = int(member.sum())
    return RealNonMemberBound(
        epsilon=epsilon,
        confidence=confidence,
        method=method,
        num_tests=int(counts.size),
        num_predictions=r,
        precision=precision,
        recall=tp / max(num_members, 1),
        num_members=num_members,
        num_non_members=values.size - num_members,
    )
