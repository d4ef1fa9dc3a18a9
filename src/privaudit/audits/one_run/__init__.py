"""One-run audit of DP-SGD: m canaries, each kept in or out for the whole of one training run (Steinke et al. 2023).

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.config`).
"""

from __future__ import annotations

from . import audit
from .audit import *  # noqa: F403 (every public name of .audit, listed in its __all__)
from .config import OneRunAuditConfig, OneRunAuditResult, config_from_dpsgd, default_methods

__all__ = [*audit.__all__, "OneRunAuditConfig", "OneRunAuditResult", "config_from_dpsgd", "default_methods"]
