"""An audit of attack scores the user computed: metrics, ε lower bounds and, for randomised membership, the one-run bound.

This is what ``privaudit bound`` runs. The scores come from any attack on
any model; privaudit never sees the model, so the threat model is the one
under which the user computed them.

Everything the figures draw is computed here, not in the plotting code: the
ROC points and the trade-off curves (:class:`ScoresCurves`, in the run's
observations). The trade-off figure compares the attack with the claimed ε
when one is given, else with the curve of the bound's own ε (and, for GDP,
its μ): the privacy the scores prove the mechanism lacks at best.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> run = audit_scores(rng.normal(1, 1, 2000), rng.normal(0, 1, 2000), delta=1e-5)
>>> run.result.headline().kind, round(run.result.auc, 2)
('lower bound', 0.76)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._core.seeding import check_seed
from .._core.validation import as_scores, check_positive
from ..stats.bounds import EpsilonLowerBound, epsilon_lower_bound
from ..stats.conversions import gdp_mu
from ..stats.metrics import roc_auc, roc_curve, tpr_at_fpr
from ..stats.one_run_combined import OneRunLowerBound, one_run_lower_bound
from ..stats.tradeoff import tradeoff_eps_delta, tradeoff_gdp
from .base import AuditResult, AuditRun, Headline

__all__ = ["FPR_LEVELS", "ScoresCurves", "ScoresResult", "audit_scores", "scores_curves"]

FPR_LEVELS = (0.001, 0.01, 0.1)
TRADEOFF_GRID = 1001  # false-positive rates at which the reference trade-off curves are evaluated


@dataclasses.dataclass(frozen=True, eq=False)
class ScoresCurves:
    """The curves the figures draw, computed by the audit so that plotting holds no statistics.

    ``roc_fpr``/``roc_tpr``: the empirical ROC (one point per distinct score).
    ``alpha``: a grid of false-positive rates; ``references``: label -> the
    false-negative rate of a reference trade-off curve on ``alpha``.
    """

    roc_fpr: np.ndarray
    roc_tpr: np.ndarray
    alpha: np.ndarray
    references: dict[str, np.ndarray]


@dataclasses.dataclass(frozen=True)
class ScoresResult(AuditResult):
    """Attack metrics and ε bounds from membership scores (higher = member)."""

    source: dict[str, str]
    num_in: int
    num_out: int
    auc: float
    tpr_at_fpr: dict[str, float]
    bound: EpsilonLowerBound
    bound_eps_delta: EpsilonLowerBound | None
    claimed_epsilon: float | None
    one_run: OneRunLowerBound | None
    seed: int
    threat_model: str = "the user's own attack: whatever access produced the scores"
    # what the trade-off figure compares the attack with: {"against", "epsilon", "delta", "curves", "note"}
    tradeoff: dict[str, Any] | None = None

    def headline(self) -> Headline:
        flag = None if self.claimed_epsilon is None else self.bound.epsilon > self.claimed_epsilon
        return Headline(
            value=self.bound.epsilon,
            label=f"ε lower bound ({self.bound.method}, {self.bound.interval}, δ = {self.bound.delta:g})",
            kind=self.bound.kind,
            confidence=self.bound.confidence,
            valid=self.bound.valid,
            flag=flag,
        )


def _reference_curves(bound: EpsilonLowerBound, method: Any, claimed_epsilon: float | None, alpha: np.ndarray) -> tuple[dict, dict]:
    """The reference trade-off curves on ``alpha`` and their description: the claim's, else the bound's own."""
    delta = bound.delta
    curves: dict[str, np.ndarray] = {}
    if claimed_epsilon is not None:
        mu = gdp_mu(claimed_epsilon, delta)
        curves[f"claimed {mu:.3g}-GDP"] = np.asarray(tradeoff_gdp(alpha, mu))
        curves[f"claimed ({claimed_epsilon:.3g}, {delta:.2g})-DP"] = np.asarray(tradeoff_eps_delta(alpha, claimed_epsilon, delta))
        note = "the claimed ε, as μ-GDP (the μ that implies it at δ) and as (ε, δ)-DP: an attack below these curves refutes the claim"
        return curves, {"against": "claimed epsilon", "epsilon": float(claimed_epsilon), "delta": delta, "curves": list(curves), "note": note}
    if not (np.isfinite(bound.epsilon) and np.isfinite(bound.parameter)):
        note = f"no reference curve: the bound is not finite (ε = {bound.epsilon})"
        return curves, {"against": "nothing", "epsilon": None, "delta": delta, "curves": [], "note": note}
    if bound.method == "gdp":
        curves[f"bound {bound.parameter:.3g}-GDP"] = np.asarray(tradeoff_gdp(alpha, bound.parameter))
    elif hasattr(method, "tradeoff") and bound.parameter > 0:  # a PLD family: its curve at the noise multiplier the bound found
        curves[f"bound: {bound.method} at noise {bound.parameter:.3g}"] = np.asarray(method.tradeoff(alpha, bound.parameter))
    family_delta = 0.0 if bound.method == "pure" else delta
    curves[f"bound ({bound.epsilon:.3g}, {family_delta:.2g})-DP"] = np.asarray(tradeoff_eps_delta(alpha, bound.epsilon, family_delta))
    note = (
        "no claimed ε was given, so the curves are those of the lower bound itself: any claim whose curve lies above them "
        "(nearer the no-privacy-loss diagonal) is refuted at the stated confidence; the gap to the attack's empirical curve "
        "is the price of the confidence intervals and the held-out split (pass --claimed-epsilon to test a claim)"
    )
    return curves, {"against": "lower bound", "epsilon": float(bound.epsilon), "delta": delta, "curves": list(curves), "note": note}


def scores_curves(in_scores, out_scores, bound: EpsilonLowerBound, *, method: Any = None, claimed_epsilon: float | None = None) -> tuple[ScoresCurves, dict]:
    """The ROC and the reference trade-off curves of a scores audit, and the description its result records."""
    curve = roc_curve(in_scores, out_scores)
    alpha = np.linspace(0.0, 1.0, TRADEOFF_GRID)
    references, description = _reference_curves(bound, method, claimed_epsilon, alpha)
    return ScoresCurves(roc_fpr=curve.fpr, roc_tpr=curve.tpr, alpha=alpha, references=references), description


def audit_scores(
    in_scores,
    out_scores,
    *,
    delta: float,
    method: Any = "gdp",
    interval: str = "clopper-pearson",
    confidence: float = 0.95,
    threshold: Any = "auto",
    seed: int = 0,
    one_run: bool = False,
    claimed_epsilon: float | None = None,
    source: dict[str, str] | None = None,
) -> AuditRun:
    """Metrics, the ε bound of ``method`` and, with ``one_run``, the one-run bound (membership drawn by fair coins)."""
    seed = check_seed(seed)
    if claimed_epsilon is not None:
        claimed_epsilon = check_positive(claimed_epsilon, "claimed_epsilon", allow_zero=True)
    in_scores, out_scores = as_scores(in_scores, "in_scores"), as_scores(out_scores, "out_scores")
    bound = epsilon_lower_bound(in_scores, out_scores, delta=delta, method=method, interval=interval, confidence=confidence, threshold=threshold, seed=seed)
    eps_delta = None
    if bound.method == "gdp":  # the (ε, δ) reading of the same scores, beside it
        eps_delta = epsilon_lower_bound(
            in_scores, out_scores, delta=delta, method="eps-delta", interval=interval, confidence=confidence, threshold=threshold, seed=seed
        )
    sweep = None
    if one_run:
        scores = np.concatenate([in_scores, out_scores])
        member = np.concatenate([np.ones(in_scores.size, bool), np.zeros(out_scores.size, bool)])
        sweep = one_run_lower_bound(scores, member, delta=delta, confidence=confidence)
    rates = tpr_at_fpr(in_scores, out_scores, FPR_LEVELS)
    curves, tradeoff = scores_curves(in_scores, out_scores, bound, method=method, claimed_epsilon=claimed_epsilon)
    result = ScoresResult(
        source=dict(source or {}),
        num_in=int(in_scores.size),
        num_out=int(out_scores.size),
        auc=float(roc_auc(in_scores, out_scores)),
        tpr_at_fpr={f"{level:g}": float(rate) for level, rate in zip(FPR_LEVELS, rates, strict=True)},
        bound=bound,
        bound_eps_delta=eps_delta,
        claimed_epsilon=claimed_epsilon,
        one_run=sweep,
        seed=seed,
        tradeoff=tradeoff,
    )
    config = {"delta": delta, "method": bound.method, "interval": interval, "confidence": confidence, "threshold": bound.threshold_strategy, "seed": seed}
    return AuditRun("scores", config, result, observations={"in_scores": in_scores, "out_scores": out_scores, "curves": curves})
