"""An audit of canary losses the user computed: exposure per canary, the random-guessing baselines and the ε they imply.

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`).
"""

from __future__ import annotations

from .audit import CanaryExposure, ExposureAuditResult, audit_exposure, read_canary_table, sampled_guessing_upper

__all__ = ["CanaryExposure", "ExposureAuditResult", "audit_exposure", "read_canary_table", "sampled_guessing_upper"]
