"""Mechanism audit: test any DP mechanism's (ε, δ) or ρ-zCDP claim from samples of its output on D and D'.

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.checks`, :mod:`.config`).
"""

from __future__ import annotations

from .audit import AUDIT, MechanismAudit, audit_mechanism
from .checks import Prepared, prepare
from .config import MechanismAuditConfig, MechanismAuditResult, MechanismTest, NeighbourPair

__all__ = [
    "AUDIT",
    "MechanismAudit",
    "MechanismAuditConfig",
    "MechanismAuditResult",
    "MechanismTest",
    "NeighbourPair",
    "Prepared",
    "audit_mechanism",
    "prepare",
]
