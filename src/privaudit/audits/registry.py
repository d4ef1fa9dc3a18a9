"""The registry of audit families: a name maps to its :class:`~privaudit.audits.base.Audit`.

The CLI's ``audit`` commands, the demo, ``report`` and ``history`` are all
driven from this one table, so a new family is one module plus one line
here. Entries are import paths, imported on first use: listing the families
imports no optional dependency.

>>> names()
['secret-sharer', 'dpsgd', 'blackbox', 'fl', 'panoramia', 'one-run', 'mechanism', 'mia', 'lm-one-run', 'synthetic-text', 'synthetic-data']
>>> get_audit("nope")
Traceback (most recent call last):
...
ValueError: `audit` must be one of 'secret-sharer', 'dpsgd', 'blackbox', 'fl', 'panoramia', 'one-run', 'mechanism', 'mia', 'lm-one-run', 'synthetic-text', 'synthetic-data', got 'nope'
"""

from __future__ import annotations

import dataclasses
import importlib

from .base import Audit

__all__ = ["AUDITS", "FAMILIES", "Family", "get_audit", "names"]


@dataclasses.dataclass(frozen=True)
class Family:
    """Where a family's pieces live, as ``module:attribute`` import paths (imported on first use).

    ``audit`` is the :class:`~privaudit.audits.base.Audit` of a family run by ``privaudit audit``
    (None for the runs written by ``bound``, ``exposure`` and ``extract``); ``figures`` returns
    ``{file name: draw(path)}`` for a run (report/runs.py), ``section`` builds its report section
    (report/sections.py)."""

    audit: str | None = None
    figures: str | None = None
    section: str | None = None


# the one family table: the CLI's audit commands, the demo, the figures, the report sections and the history read it
FAMILIES: dict[str, Family] = {
    "secret-sharer": Family(
        audit="privaudit.audits.secret_sharer:AUDIT", figures="privaudit.report.secret_sharer:figures", section="privaudit.report.secret_sharer:section"
    ),
    "dpsgd": Family(audit="privaudit.audits.dpsgd:AUDIT", figures="privaudit.report.dpsgd:figures", section="privaudit.report.dpsgd:section"),
    "blackbox": Family(audit="privaudit.audits.blackbox:AUDIT", section="privaudit.report.blackbox:section"),
    "fl": Family(audit="privaudit.audits.fl:AUDIT", figures="privaudit.report.fl:figures", section="privaudit.report.fl:section"),
    "panoramia": Family(audit="privaudit.audits.panoramia:AUDIT", figures="privaudit.report.panoramia:figures", section="privaudit.report.panoramia:section"),
    "one-run": Family(audit="privaudit.audits.one_run:AUDIT", figures="privaudit.report.one_run:figures", section="privaudit.report.one_run:section"),
    "mechanism": Family(audit="privaudit.audits.mechanism:AUDIT", figures="privaudit.report.mechanism:figures", section="privaudit.report.mechanism:section"),
    "mia": Family(audit="privaudit.audits.mia:AUDIT", figures="privaudit.report.mia:figures", section="privaudit.report.mia:section"),
    "lm-one-run": Family(audit="privaudit.audits.lm:AUDIT", figures="privaudit.report.lm:figures", section="privaudit.report.lm:section"),
    "synthetic-text": Family(
        audit="privaudit.audits.synthetic_text:AUDIT", figures="privaudit.report.lm:figures", section="privaudit.report.lm:synthetic_section"
    ),
    "synthetic-data": Family(
        audit="privaudit.audits.synthetic_data:AUDIT", figures="privaudit.report.synthetic_data:figures", section="privaudit.report.synthetic_data:section"
    ),
    "extraction": Family(figures="privaudit.report.extraction:figures", section="privaudit.report.extraction:section"),
    "scores": Family(figures="privaudit.report.scores:figures", section="privaudit.report.scores:section"),
    "exposure": Family(figures="privaudit.report.exposure:figures", section="privaudit.report.exposure:section"),
    "opacus-inloop": Family(section="privaudit.report.opacus:section"),
    "opacus-hidden": Family(section="privaudit.report.opacus:section"),
    "opacus": Family(section="privaudit.report.opacus:section"),
}
AUDITS: dict[str, str] = {name: family.audit for name, family in FAMILIES.items() if family.audit is not None}


def names() -> list[str]:
    """The registered family names, in registry order."""
    return list(AUDITS)


def get_audit(name: str) -> Audit:
    """The audit registered as ``name``."""
    if name not in AUDITS:
        raise ValueError(f"`audit` must be one of {', '.join(map(repr, AUDITS))}, got {name!r}")
    module, attribute = AUDITS[name].split(":")
    return getattr(importlib.import_module(module), attribute)
