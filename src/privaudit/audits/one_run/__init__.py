"""One-run audit of DP-SGD: m canaries, each kept in or out for the whole of one training run (Steinke et al. 2023).

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.config`).
"""

from __future__ import annotations

from .audit import AUDIT, OneRunAudit, mislabeled_canaries, one_run_bounds, run_one_run_audit
from .config import OneRunAuditConfig, OneRunAuditResult, config_from_dpsgd, default_methods

__all__ = [
    "AUDIT",
    "OneRunAudit",
    "OneRunAuditConfig",
    "OneRunAuditResult",
    "config_from_dpsgd",
    "default_methods",
    "mislabeled_canaries",
    "one_run_bounds",
    "run_one_run_audit",
]
