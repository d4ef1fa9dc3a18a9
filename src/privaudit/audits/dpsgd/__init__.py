"""White-box audit of DP-SGD with gradient canaries (Tight Auditing Algorithm 2, §5.5, §6.3).

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.config`).
"""

from __future__ import annotations

from .audit import (
    AUDIT,
    DPSGDAudit,
    audited_model_and_data,
    bound_step_observations,
    bounds_on_prefixes,
    detect_bugs,
    observation_fits,
    prefix_sizes,
    tradeoff_curves,
)
from .config import DPSGDAuditConfig, DPSGDAuditResult, GaussianFit, ObservationFits, PrefixBound, claimed_step_epsilon

__all__ = [
    "AUDIT",
    "DPSGDAudit",
    "DPSGDAuditConfig",
    "DPSGDAuditResult",
    "GaussianFit",
    "ObservationFits",
    "PrefixBound",
    "audited_model_and_data",
    "bound_step_observations",
    "bounds_on_prefixes",
    "claimed_step_epsilon",
    "detect_bugs",
    "observation_fits",
    "prefix_sizes",
    "tradeoff_curves",
]
