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

import importlib

from .base import Audit

__all__ = ["AUDITS", "get_audit", "names"]

AUDITS: dict[str, str] = {
    "secret-sharer": "privaudit.audits.secret_sharer:AUDIT",
    "dpsgd": "privaudit.audits.dpsgd:AUDIT",
    "blackbox": "privaudit.audits.blackbox:AUDIT",
    "fl": "privaudit.audits.fl:AUDIT",
    "panoramia": "privaudit.audits.panoramia:AUDIT",
    "one-run": "privaudit.audits.one_run:AUDIT",
    "mechanism": "privaudit.audits.mechanism:AUDIT",
    "mia": "privaudit.audits.mia:AUDIT",
    "lm-one-run": "privaudit.audits.lm_one_run:AUDIT",
    "synthetic-text": "privaudit.audits.synthetic_text:AUDIT",
    "synthetic-data": "privaudit.audits.synthetic_data:AUDIT",
}


def names() -> list[str]:
    """The registered family names, in registry order."""
    return list(AUDITS)


def get_audit(name: str) -> Audit:
    """The audit registered as ``name``."""
    if name not in AUDITS:
        raise ValueError(f"`audit` must be one of {', '.join(map(repr, AUDITS))}, got {name!r}")
    module, attribute = AUDITS[name].split(":")
    return getattr(importlib.import_module(module), attribute)
