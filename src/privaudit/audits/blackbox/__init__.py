"""Black-box audit of DP-SGD (Tight Auditing, Algorithm 1): many models with and without a canary.

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.config`).
"""

from __future__ import annotations

from .audit import AUDIT, BlackBoxAudit, check_train_function, dataset_conventions, run_blackbox_audit, run_configs, train_one
from .config import BlackBoxConfig, BlackBoxResult

__all__ = [
    "AUDIT",
    "BlackBoxAudit",
    "BlackBoxConfig",
    "BlackBoxResult",
    "check_train_function",
    "dataset_conventions",
    "run_blackbox_audit",
    "run_configs",
    "train_one",
]
