"""One-shot privacy estimation for DP-FedAvg (One-shot Algorithms 2 and 3, §5).

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.gaussian_mechanism`).
"""

from __future__ import annotations

from .audit import (
    AUDIT,
    CosineDensities,
    FLAudit,
    FLAuditConfig,
    FLAuditResult,
    FLRunResult,
    ThreatModelEstimate,
    analytical_epsilon,
    cosine_densities,
    run_labels,
)
from .gaussian_mechanism import GaussianMechanismAudit, audit_gaussian_mechanism, gaussian_mechanism_cosines, gaussian_mechanism_cosines_exact_law, noise_rng

__all__ = [
    "AUDIT",
    "CosineDensities",
    "FLAudit",
    "FLAuditConfig",
    "FLAuditResult",
    "FLRunResult",
    "GaussianMechanismAudit",
    "ThreatModelEstimate",
    "analytical_epsilon",
    "audit_gaussian_mechanism",
    "cosine_densities",
    "gaussian_mechanism_cosines",
    "gaussian_mechanism_cosines_exact_law",
    "noise_rng",
    "run_labels",
]
