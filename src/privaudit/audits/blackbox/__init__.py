"""Black-box audit of DP-SGD (Tight Auditing, Algorithm 1): many models with and without a canary.

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.config`).
"""

from __future__ import annotations

from . import audit
from .audit import *  # noqa: F403 (every public name of .audit, listed in its __all__)
from .config import BlackBoxConfig, BlackBoxResult

__all__ = [*audit.__all__, "BlackBoxConfig", "BlackBoxResult"]
