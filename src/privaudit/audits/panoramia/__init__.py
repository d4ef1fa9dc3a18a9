"""PANORAMIA (Kazmi et al.): audit a trained model with generated non-members; no retraining, no canaries.

The family's audit pieces, one module each:

* :mod:`.game`: Algorithm 1 on any per-example loss (:func:`run_panoramia`),
  its settings and typed result, and the curves its figures draw
  (:func:`panoramia_curves`);
* :mod:`.targets`: the models audited: privaudit's trained targets, and a
  user's saved classifier and members, loaded safely;
* :mod:`.own_model`: the audit of a user's model on its own members
  (:func:`run_panoramia_on_model`);
* :mod:`.memory`: the memory an audit holds, estimated before any model is built;
* :mod:`.audit`: the family on the audit interface (:data:`AUDIT`): the
  embedded default and the results.

The statistics are in :mod:`privaudit.stats.panoramia`, the generators in
:mod:`privaudit.generators` and the figures in :mod:`privaudit.report.panoramia`.
"""

from __future__ import annotations

from .audit import (
    AUDIT,
    DEMO_DATASETS,
    PanoramiaAudit,
    PanoramiaDemoConfig,
    PanoramiaResults,
    PanoramiaTarget,
    run_panoramia_default,
)
from .game import (
    GameScores,
    PanoramiaAuditResult,
    PanoramiaCurves,
    PanoramiaSettings,
    PrecisionRecallCurve,
    fit_classifier,
    panoramia_curves,
    run_panoramia,
    score_losses,
)
from .memory import classifier_parameters, spec_memory_estimate
from .own_model import run_panoramia_on_model
from .targets import TorchTarget, TrainingRecipe, load_members, load_model, save_classifier, train_classifier

__all__ = [
    "AUDIT",
    "DEMO_DATASETS",
    "GameScores",
    "PanoramiaAudit",
    "PanoramiaAuditResult",
    "PanoramiaCurves",
    "PanoramiaDemoConfig",
    "PanoramiaResults",
    "PanoramiaSettings",
    "PanoramiaTarget",
    "PrecisionRecallCurve",
    "TorchTarget",
    "TrainingRecipe",
    "classifier_parameters",
    "fit_classifier",
    "load_members",
    "load_model",
    "panoramia_curves",
    "run_panoramia",
    "run_panoramia_default",
    "run_panoramia_on_model",
    "save_classifier",
    "score_losses",
    "spec_memory_estimate",
    "train_classifier",
]
