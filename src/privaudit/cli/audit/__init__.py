"""``privaudit audit FAMILY``: one command per registered audit, built from the registry by :mod:`.command` (which describes the options every command shares).

One module per family holds its own options (``FLAGS``).
"""

from __future__ import annotations

from .command import FLAGS, make_audit_command, merged_config
from .flags import Flag

__all__ = ["FLAGS", "Flag", "make_audit_command", "merged_config"]
