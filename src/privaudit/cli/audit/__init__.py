"""``privaudit audit FAMILY``: one command per registered audit, all built by one function.

Every command takes the same options (``--output``, ``--config``,
``--print-config``, ``--seed``, the history options, ``--json``) plus the
family's own flags from :data:`FLAGS`, each of which either overrides a key
of the config or is handed to ``Audit.run``. The command loads the config
(the embedded default when ``--config`` is absent), checks the output path
and opens the history before any work, runs the audit, writes it with
:func:`privaudit.report.runs.write_run` (results.json, figures and
report.html, all or nothing), records it, and prints the
family's table (:mod:`.tables`) or ``--json``.

One module per family holds its options (``FLAGS``); :mod:`.command` builds the commands from the registry."""

from __future__ import annotations

from .command import FLAGS, make_audit_command, merged_config
from .flags import Flag

__all__ = ["FLAGS", "Flag", "make_audit_command", "merged_config"]
