"""An audit of attack scores the user computed: metrics, ε lower bounds and, for randomised membership, the one-run bound.

This is what ``privaudit bound`` runs. The scores come from any attack on
any model; privaudit never sees the model, so the threat model is the one
under which the user computed them.

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
from .._core.validation import as_scores
from ..stats.bounds import EpsilonLowerBound, epsilon_lower_bound
from ..stats.metrics import roc_auc, tpr_at_fpr
from ..stats.one_run import OneRunSweep, epsilon_one_run_sweep
from .base import AuditResult, AuditRun, Headline

__all__ = ["FPR_LEVELS", "ScoresResult", "audit_scores"]

FPR_LEVELS = (0.001, 0.01, 0.1)


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
    one_run: OneRunSweep | None
    seed: int
    threat_model: str = "the user's own attack: whatever access produced the scores"

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


def audit_scores(
    in_scores,
    out_scores,
    *,
    delta: float,
    method: Any = "gdp",
    interval: str = "clopper-pearson",
    confidence: float = 0.95,
    threshold: Any = "split",
    seed: int = 0,
    one_run: bool = False,
    claimed_epsilon: float | None = None,
    source: dict[str, str] | None = None,
) -> AuditRun:
    """Metrics, the ε bound of ``method`` and, with ``one_run``, the one-run bound (membership drawn by fair coins)."""
    seed = check_seed(seed)
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
        sweep = epsilon_one_run_sweep(scores, member, delta=delta, confidence=confidence)
    rates = tpr_at_fpr(in_scores, out_scores, FPR_LEVELS)
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
    )
    config = {"delta": delta, "method": bound.method, "interval": interval, "confidence": confidence, "threshold": bound.threshold_strategy, "seed": seed}
    return AuditRun("scores", config, result, observations={"in_scores": in_scores, "out_scores": out_scores})
