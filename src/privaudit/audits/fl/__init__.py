"""One-shot privacy estimation for DP-FedAvg (One-shot Algorithms 2 and 3, §5).

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`, :mod:`.gaussian_mechanism`).
"""

from __future__ import annotations

from . import audit, gaussian_mechanism
from .audit import *  # noqa: F403 (every public name of .audit, listed in its __all__)
from .gaussian_mechanism import *  # noqa: F403 (every public name of .gaussian_mechanism, listed in its __all__)

__all__ = [*audit.__all__, *gaussian_mechanism.__all__]
