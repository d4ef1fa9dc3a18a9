"""White-box audit of DP-SGD with gradient canaries (Tight Auditing Algorithm 2, §5.5, §6.3).

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.config`).
"""

from __future__ import annotations

from . import audit
from .audit import *  # noqa: F403 (every public name of .audit, listed in its __all__)
from .config import DPSGDAuditConfig, DPSGDAuditResult, GaussianFit, ObservationFits, PrefixBound, claimed_step_epsilon

__all__ = [*audit.__all__, "DPSGDAuditConfig", "DPSGDAuditResult", "GaussianFit", "ObservationFits", "PrefixBound", "claimed_step_epsilon"]
