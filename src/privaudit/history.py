"""A local history of audits (SQLite), to see privacy regressions across releases of a model.

Every audit command appends its ``results.json`` to the store: the model it
audited (``--model-id``, by default the dataset and architecture of its
configuration), the audit family, an optional release label, the time, the
headline number of its report section (:func:`privaudit.report.sections.section_for`:
value, label, kind, confidence, validity) and the full JSON. Only JSON text
is stored, never pickle.

The store is ``~/.privaudit/history.sqlite`` unless ``--history PATH`` or the
environment variable ``PRIVAUDIT_HISTORY`` says otherwise; ``--no-history``
or ``PRIVAUDIT_HISTORY=off`` turns recording off.

:func:`compare` pairs consecutive audits of the same model, family and
headline, and flags an increase of the headline (a larger ε lower bound or
exposure means the newer release leaks more) beyond ``tolerance``.

>>> import tempfile, os
>>> store = HistoryStore(os.path.join(tempfile.mkdtemp(), "h.sqlite"))
>>> for eps in (1.0, 1.05, 2.0):
...     _ = store.append({"audit": "blackbox", "epsilon_lower_bound": eps, "confidence": 0.95}, model_id="m")
>>> [(round(c.change, 2), c.regression) for c in compare(store.records(model_id="m"), tolerance=0.1)]
[(0.05, False), (0.95, True)]
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import math
import os
import sqlite3
from pathlib import Path
from typing import Any

from ._core.validation import check_positive

__all__ = ["DEFAULT_PATH", "ENVIRONMENT_VARIABLE", "AuditRecord", "Change", "HistoryStore", "compare", "default_model_id", "history_path", "record_audit"]

DEFAULT_PATH = Path("~/.privaudit/history.sqlite")
ENVIRONMENT_VARIABLE = "PRIVAUDIT_HISTORY"
_OFF = ("off", "none", "0", "false")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audits (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    model_id TEXT NOT NULL,
    audit TEXT NOT NULL,
    release TEXT,
    created_at TEXT NOT NULL,
    value REAL,
    label TEXT NOT NULL,
    kind TEXT NOT NULL,
    confidence REAL,
    valid INTEGER NOT NULL,
    schema_version INTEGER,
    results TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audits_by_model ON audits (model_id, audit, id);
"""


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    """One stored audit; ``results`` is the full results dict."""

    id: int
    model_id: str
    audit: str
    release: str | None
    created_at: str
    value: float | None
    label: str
    kind: str
    confidence: float | None
    valid: bool
    results: dict


@dataclasses.dataclass(frozen=True)
class Change:
    """Two consecutive audits of one model, family and headline; ``regression`` when the headline rose by more than the tolerance."""

    before: AuditRecord
    after: AuditRecord
    change: float | None
    regression: bool


def history_path(path=None, *, enabled: bool = True) -> Path | None:
    """Where to record: ``path``, else ``$PRIVAUDIT_HISTORY``, else ``~/.privaudit/history.sqlite``; None when off.

    >>> history_path("h.sqlite").name, history_path("h.sqlite", enabled=False)
    ('h.sqlite', None)
    """
    if not enabled:
        return None
    if path is None:
        path = os.environ.get(ENVIRONMENT_VARIABLE) or DEFAULT_PATH
        if str(path).strip().lower() in _OFF:
            return None
    return Path(path).expanduser()


def default_model_id(data: dict) -> str:
    """A model name from a results dict: its dataset and architecture, else its audit family.

    >>> default_model_id({"audit": "dpsgd", "config": {"dataset": "digits", "architecture": "mlp"}})
    'digits/mlp'
    """
    config = data.get("config") or {}
    parts = [str(config[key]) for key in ("dataset", "architecture") if key in config]
    if not parts and isinstance(config.get("model"), str):  # a user's model file
        parts = [Path(config["model"]).name]
    return "/".join(parts) or str(data.get("audit", "model"))


def _finite(value) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


class HistoryStore:
    """The audits of every model, in one SQLite file (created with its folder on first use)."""

    def __init__(self, path):
        self.path = Path(path).expanduser()
        if self.path.is_dir():
            raise ValueError(f"`--history` must be a file path, got the directory {str(self.path)!r}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as connection:
                connection.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as error:
            raise ValueError(f"`--history`: cannot open {str(self.path)!r} as a history store: {error}") from None

    def __repr__(self) -> str:
        return f"HistoryStore({str(self.path)!r})"

    @contextlib.contextmanager
    def _connect(self):
        connection = sqlite3.connect(self.path, timeout=30)
        try:
            with connection:  # one transaction: committed on success, rolled back on error
                yield connection
        finally:
            connection.close()

    def append(self, data: dict, *, model_id: str, release: str | None = None) -> int:
        """Store one results dict for ``model_id``; return its id."""
        from .report.sections import section_for

        if not isinstance(model_id, str) or not model_id.strip():
            raise ValueError(f"`model_id` must be a non-empty string, got {model_id!r}")
        section = section_for(data)
        created = data.get("created_at") or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        row = (
            model_id, section.audit, release, created, _finite(section.value) if section.value is not None else None,
            section.label, section.kind, section.confidence, int(section.valid), data.get("schema_version"),
            json.dumps(data, allow_nan=False, default=str),
        )
        with self._connect() as connection:
            cursor = connection.execute(
                "INSERT INTO audits (model_id, audit, release, created_at, value, label, kind, confidence, valid, schema_version, results)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            return int(cursor.lastrowid)

    def records(self, *, model_id: str | None = None, audit: str | None = None) -> list[AuditRecord]:
        """Stored audits in the order they were appended, optionally of one model and/or family."""
        query = "SELECT id, model_id, audit, release, created_at, value, label, kind, confidence, valid, results FROM audits"
        clauses = [(name, value) for name, value in (("model_id", model_id), ("audit", audit)) if value is not None]
        if clauses:
            query += " WHERE " + " AND ".join(f"{name} = ?" for name, _ in clauses)
        with self._connect() as connection:
            rows = connection.execute(query + " ORDER BY id", [value for _, value in clauses]).fetchall()
        return [AuditRecord(*row[:9], bool(row[9]), json.loads(row[10])) for row in rows]

    def models(self) -> list[tuple[str, str, int]]:
        """(model id, audit family, number of audits) for everything stored."""
        with self._connect() as connection:
            return connection.execute("SELECT model_id, audit, COUNT(*) FROM audits GROUP BY model_id, audit ORDER BY model_id, audit").fetchall()


def compare(records: list[AuditRecord], *, tolerance: float = 0.1) -> list[Change]:
    """Changes between consecutive audits with the same model, family and headline label.

    ``regression`` is True when the later headline exceeds the earlier one by
    more than ``tolerance`` (absolute, in the headline's unit). Audits whose
    headline is missing give a change of None and no regression.
    """
    tolerance = check_positive(tolerance, "tolerance", allow_zero=True)
    last: dict[tuple, AuditRecord] = {}
    changes = []
    for record in records:
        key = (record.model_id, record.audit, record.label)
        before = last.get(key)
        if before is not None:
            change = None if before.value is None or record.value is None else record.value - before.value
            changes.append(Change(before=before, after=record, change=change, regression=change is not None and change > tolerance))
        last[key] = record
    return changes


def record_audit(data: dict[str, Any], *, history=None, enabled: bool = True, model_id: str | None = None, release: str | None = None) -> Path | None:
    """Append ``data`` to the history store (see :func:`history_path`); return the store's path, or None when off.

    >>> import tempfile, os
    >>> path = record_audit({"audit": "blackbox", "epsilon_lower_bound": 0.5}, history=os.path.join(tempfile.mkdtemp(), "h.sqlite"))
    >>> [r.model_id for r in HistoryStore(path).records()]
    ['blackbox']
    """
    path = history_path(history, enabled=enabled)
    if path is None:
        return None
    HistoryStore(path).append(data, model_id=model_id or default_model_id(data), release=release)
    return path
