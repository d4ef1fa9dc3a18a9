"""privaudit: empirical privacy auditing of machine-learning models.

Score convention, everywhere: a higher score means "more likely a member".
Losses are turned into scores by negation where a function says so.

The public names below are imported lazily, so ``import privaudit`` stays
cheap and never pulls in optional dependencies.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    # exposure (Secret Sharer, Jagielski's note)
    "exposure": "privaudit.stats.exposure",
    "exact_exposure": "privaudit.stats.exposure",
    "exposure_extrapolated": "privaudit.stats.exposure",
    "random_guessing_exposure": "privaudit.stats.exposure",
    "epsilon_from_exposure": "privaudit.stats.exposure",
    # membership-inference metrics
    "roc_curve": "privaudit.stats.metrics",
    "roc_auc": "privaudit.stats.metrics",
    "tpr_at_fpr": "privaudit.stats.metrics",
    "precision_at_recall": "privaudit.stats.metrics",
    # epsilon lower bounds from observations (Tight Auditing)
    "epsilon_lower_bound": "privaudit.stats.bounds",
    "gdp_auc_lower_bound": "privaudit.stats.auc",
    "Split": "privaudit.stats.thresholds",
    "Bonferroni": "privaudit.stats.thresholds",
    "MultiSplit": "privaudit.stats.thresholds",
    "Best": "privaudit.stats.thresholds",
    "SubsampledGaussian": "privaudit.stats.pld",
    "step_to_end_epsilon": "privaudit.stats.pld",
    # conversions
    "gdp_delta": "privaudit.stats.conversions",
    "gdp_epsilon": "privaudit.stats.conversions",
    "gdp_mu": "privaudit.stats.conversions",
    "gaussian_epsilon": "privaudit.stats.conversions",
    "gaussian_noise_multiplier": "privaudit.stats.conversions",
    "tradeoff_gdp": "privaudit.stats.tradeoff",
    "tradeoff_eps_delta": "privaudit.stats.tradeoff",
    # one-shot estimation (federated learning)
    "epsilon_two_gaussians": "privaudit.stats.one_shot",
    "epsilon_one_shot": "privaudit.stats.one_shot",
    "epsilon_lower_bound_cosines": "privaudit.stats.one_shot",
    # one-run bound (Steinke, Nasr, Jagielski 2023)
    "epsilon_one_run": "privaudit.stats.one_run",
    "epsilon_one_run_sweep": "privaudit.stats.one_run",
    # one-run bounds against f-DP (Mahloujifar et al. 2024), Gaussian white-box sums, and the best of them
    "epsilon_one_run_fdp": "privaudit.stats.one_run_fdp",
    "epsilon_one_run_gaussian": "privaudit.stats.one_run_gaussian",
    "one_run_lower_bound": "privaudit.stats.one_run_combined",
    # PANORAMIA
    "panoramia_bounds": "privaudit.stats.panoramia",
    # membership inference with reference models (LiRA, RMIA)
    "logit_confidence": "privaudit.stats.mia",
    "loss_scores": "privaudit.stats.mia",
    "lira_online_scores": "privaudit.stats.mia",
    "lira_offline_scores": "privaudit.stats.mia",
    "rmia_scores": "privaudit.stats.mia",
    "attack_metrics": "privaudit.stats.mia_metrics",
    # the one writer of an audit's output, also for results of a user's own loop (OpacusInLoopAuditor, audit_opacus)
    "write_run": "privaudit.report.runs",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'privaudit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
