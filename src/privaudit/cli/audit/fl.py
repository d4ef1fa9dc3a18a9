"""The options of ``privaudit audit fl``."""

from __future__ import annotations

from ..claims import claim_flags
from .flags import Flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = claim_flags("the DP-FedAvg simulation, for a client (default: privaudit's accountant for the settings it runs)")
