"""A local history of audits (SQLite), to see privacy regressions across releases of a model.

Every audit command appends its ``results.json`` to the store: the model's
lineage (``--model-id``; by default :func:`default_model_id`, derived from
the schema of the data, the task and the embedded architecture, never from
content hashes or the training function's name), the data fingerprint of
that lineage, the content identity of this release
(:func:`privaudit.history_ids.model_identity`), the audit family, an
optional release label, the time, the headline number of its report section
(:func:`privaudit.report.sections.section_for`: value, label, kind,
confidence, validity) and the full JSON. Only JSON text is stored, never
pickle.

The store is ``~/.privaudit/history.sqlite`` unless ``--history PATH`` or the
environment variable ``PRIVAUDIT_HISTORY`` says otherwise; ``--no-history``
or ``PRIVAUDIT_HISTORY=off`` turns recording off. A store is created only
where no file exists; an existing file is used only if it is a privaudit
store holding nothing but privaudit's table and index (a trigger, a view or
any other object is refused: it could rewrite what is stored).

:func:`compare` pairs consecutive audits of one lineage, family and headline
quantity (:func:`quantity`: the headline's name, without the attack, the
ceiling or the counts its label also states), and flags an increase of the
headline's number (a larger ε lower bound or exposure means the newer
release leaks more) beyond ``tolerance``. Under one ``--model-id``, data of
another schema (or another embedded architecture) starts a new lineage
unless ``across_data`` is set.

>>> import tempfile, os
>>> store = HistoryStore(os.path.join(tempfile.mkdtemp(), "h.sqlite"))
>>> for eps in (1.0, 1.05, 2.0):
...     _ = store.append({"audit": "custom", "epsilon": eps, "kind": "lower bound", "confidence": 0.95}, model_id="m")
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
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from ._core.messages import describe_value, has_control_characters, printable
from ._core.validation import check_positive

__all__ = [
    "DEFAULT_PATH",
    "ENVIRONMENT_VARIABLE",
    "LOCK_WAIT",
    "SCHEMA_VERSION",
    "AuditRecord",
    "Change",
    "HistoryLockedError",
    "HistoryStore",
    "check_label",
    "compare",
    "default_model_id",
    "history_path",
    "new_lineages",
    "printable",
    "quantity",
    "record_audit",
]

DEFAULT_PATH = Path("~/.privaudit/history.sqlite")
ENVIRONMENT_VARIABLE = "PRIVAUDIT_HISTORY"
SCHEMA_VERSION = (
    2  # PRAGMA user_version of a store; 1: before lineages (read as is, migrated on the first write); 0 with an ``audits`` table: before versioning
)
APPLICATION_ID = 0x50415544  # PRAGMA application_id: "PAUD"
LOCK_WAIT = 5.0  # seconds a locked store is retried before giving up
MAX_LABEL = 200
_OFF = ("off", "none", "0", "false")

_COLUMNS_V1 = ("id", "model_id", "audit", "release", "created_at", "value", "label", "kind", "confidence", "valid", "schema_version", "results")
_COLUMNS = (*_COLUMNS_V1, "identity", "lineage")
#: PRAGMA table_xinfo of the table (name, declared type, not null, default, primary key, hidden): no generated or hidden column
_XINFO = tuple(
    (name, kind, int(name in ("model_id", "audit", "created_at", "label", "kind", "valid", "results")), None, int(name == "id"), 0)
    for name, kind in zip(
        _COLUMNS, ("INTEGER", "TEXT", "TEXT", "TEXT", "TEXT", "REAL", "TEXT", "TEXT", "REAL", "INTEGER", "INTEGER", "TEXT", "TEXT", "TEXT"), strict=True
    )
)
_INDEX = "CREATE INDEX audits_by_model ON audits (model_id, audit, id)"
_OURS = {("table", "audits"), ("table", "sqlite_sequence"), ("index", "audits_by_model")}
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS audits (
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
    results TEXT NOT NULL,
    identity TEXT,
    lineage TEXT
)""",
    "CREATE INDEX IF NOT EXISTS audits_by_model ON audits (model_id, audit, id)",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
    f"PRAGMA application_id = {APPLICATION_ID}",
)


class HistoryLockedError(ValueError):
    """The store stayed locked by another process for :data:`LOCK_WAIT` seconds; nothing was written to it.

    An audit that hits this has finished and written its results.json: the
    command line reports it as a warning and keeps the results.
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
    identity: str | None = None  # the release's content identity; None in a store written before lineages
    lineage: str | None = None  # the data fingerprint of its lineage (:func:`privaudit.history_ids.lineage_of`); None likewise


@dataclasses.dataclass(frozen=True)
class Change:
    """Two consecutive audits of one lineage, family and headline quantity; ``regression`` when the number rose by more than the tolerance."""

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
    try:
        return Path(path).expanduser()
    except RuntimeError:  # '~nouser/...': no such user, or no home directory to expand
        raise ValueError(f"`--history` {printable(repr(str(path)))}: cannot expand its '~' (no such user or no home directory)") from None


def check_label(value, name: str) -> str | None:
    """``value`` if it can be stored as a model id or release label: None, or non-blank printable text of at most 200 characters.

    Control characters (escape sequences, carriage returns, bidi overrides)
    are refused: printed later by ``privaudit history`` they would act on
    the terminal.

    >>> check_label("v1.2", "--release")
    'v1.2'
    >>> check_label("v1\x1b[2J", "--release")
    Traceback (most recent call last):
    ...
    ValueError: `--release` must be text without control characters, got 'v1\\x1b[2J'
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"`{name}` must be a non-empty string, got {describe_value(value)}")
    if has_control_characters(value):
        raise ValueError(f"`{name}` must be text without control characters, got {describe_value(value)}")
    if len(value) > MAX_LABEL:
        raise ValueError(f"`{name}` must have at most {MAX_LABEL} characters, got {len(value)}")
    return value


def default_model_id(data: dict) -> str:
    """The default ``--model-id``: the lineage of the audit (:func:`privaudit.history_ids.lineage_of`), cut to a label.

    It is derived from the schema of the data (column names and label
    column, or the embedded dataset), the task and the embedded
    architecture, never from the training function's name or a content
    hash: two releases of one model on one table share it, another dataset
    or architecture gets another.

    >>> default_model_id({"audit": "dpsgd", "config": {"dataset": "digits", "architecture": "mlp"}})
    'digits/mlp'
    """
    from .history_ids import lineage_of

    return printable(lineage_of(data))[:MAX_LABEL]


def quantity(label: str) -> str:
    """The quantity a headline label names, without what its label adds in parentheses or after a colon, semicolon or comma.

    Releases are compared on this and the headline's kind and confidence:
    the chosen attack, the ceiling or a count in the label do not make a
    number another quantity.

    >>> quantity("ε lower bound (canary mode, online RMIA; ceiling 4.3, δ = 1e-05, 95%)")
    'ε lower bound'
    """
    return re.split(r" \(|[:;,]", label, maxsplit=1)[0].strip()


def _finite(value) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _is_lock(error: sqlite3.Error) -> bool:
    text = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class HistoryStore:
    """The audits of every model, in one SQLite file.

    Opening an existing file only reads it: a file that is not a privaudit
    store (an empty file, other tables, a trigger, a view or an index of
    someone else, another ``application_id``, a newer ``user_version``) is
    refused and left untouched. A missing file is created with its folder
    when ``create`` is True (the writers' case, so a bad path fails before an
    audit runs), else refused; a symlink to a missing file is refused, never
    followed to create one. Only :meth:`append` writes; a store of an older
    version is migrated by it. A store locked by another process is retried
    for ``lock_wait`` seconds, then :class:`HistoryLockedError` is raised.
    """

    def __init__(self, path, *, create: bool = True, lock_wait: float = LOCK_WAIT):
        self.path = Path(path).expanduser()
        self.lock_wait = check_positive(lock_wait, "lock_wait", allow_zero=True)
        shown = describe_value(str(self.path))
        if self.path.is_dir():
            raise ValueError(f"`--history` must be a file path, got the directory {shown}")
        if self.path.exists():
            if not self.path.is_file():
                raise ValueError(f"`--history` must be a regular file, got {shown}")
            if self._retry(self._read, self._inspect) == "empty":
                raise ValueError(
                    f"`--history`: {shown} is an existing file but not a privaudit history store (it holds no tables);"
                    " a store is created only where no file exists: give another --history path"
                )
            return
        if self.path.is_symlink():
            raise ValueError(f"`--history`: {shown} is a symlink to a missing file; a store is never created through a symlink: give another --history path")
        if not create:
            raise ValueError(f"`--history`: no results store at {shown}; run an audit first")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ValueError(f"`--history`: cannot create {shown}: {error.strerror or error}") from None
        self._retry(self._create, lambda connection: None)

    def __repr__(self) -> str:
        return f"HistoryStore({str(self.path)!r})"

    def _fail(self, error: Exception) -> ValueError:
        return ValueError(f"`--history`: cannot use {describe_value(str(self.path))} as a history store: {describe_value(str(error))}")

    def _retry(self, method, action):
        """``method(action)``, retried with backoff while another process holds the store's lock."""
        deadline = time.monotonic() + self.lock_wait
        pause = 0.05
        while True:
            try:
                return method(action)
            except sqlite3.Error as error:
                if not _is_lock(error):
                    raise self._fail(error) from None
                if time.monotonic() + pause > deadline:
                    raise HistoryLockedError(
                        f"`--history`: {describe_value(str(self.path))} stayed locked by another process for {self.lock_wait:g} s; the audit was not recorded"
                    ) from None
            except OSError as error:
                raise self._fail(error) from None
            time.sleep(pause)
            pause = min(2 * pause, 0.5)

    def _read(self, action):
        """``action(connection)`` on a read-only connection: reading never writes, not even a journal."""
        uri = self.path.absolute().as_uri() + "?mode=ro"
        connection = sqlite3.connect(uri, uri=True, timeout=0.1, isolation_level=None)
        try:
            return action(connection)
        finally:
            connection.close()

    def _create(self, action):
        """Create the store: only where no file exists (``O_EXCL``), so another file that appeared meanwhile is never taken over."""
        try:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except FileExistsError:
            raise ValueError(f"`--history`: {describe_value(str(self.path))} appeared while the store was being created; run again") from None
        os.close(descriptor)
        return self._write(action, new=True)

    def _write(self, action, *, new: bool = False):
        """One write transaction: check the file is a store (or the empty file just created), create or migrate the schema, then ``action(connection)``."""
        connection = sqlite3.connect(self.path, timeout=0.1, isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                state = self._inspect(connection)
                if state == "empty" and not new:
                    raise ValueError(f"`--history`: {describe_value(str(self.path))} is not a privaudit history store (it holds no tables)")
                if state == "v1":  # a store written before lineages: two columns more, rows kept
                    connection.execute("ALTER TABLE audits ADD COLUMN identity TEXT")
                    connection.execute("ALTER TABLE audits ADD COLUMN lineage TEXT")
                if state != "store" or connection.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                    for statement in _SCHEMA:
                        connection.execute(statement)
                result = action(connection)
                connection.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
                raise
            return result
        finally:
            connection.close()

    def _inspect(self, connection) -> str:
        """ "empty" (no tables yet), "store" or "v1" (a store written before lineages); ValueError for a file that is not a privaudit history store.

        Every object in the schema must be privaudit's own: a trigger could
        rewrite what is stored, a view or another table could be read in its
        place, and a generated column could compute a stored value.
        """
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        application = connection.execute("PRAGMA application_id").fetchone()[0]
        objects = connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        tables = {name for kind, name, _ in objects if kind == "table"}
        shown = describe_value(str(self.path))
        if application not in (0, APPLICATION_ID):
            raise ValueError(f"`--history`: {shown} is another application's database (application_id {application}), not a privaudit history store")
        if version > SCHEMA_VERSION:
            raise ValueError(f"`--history`: {shown} was written by a newer privaudit (store version {version}; this one reads up to {SCHEMA_VERSION})")
        if not objects and version == 0:
            return "empty"
        if tables - {"audits", "sqlite_sequence"} or "audits" not in tables:
            found = ", ".join(sorted(tables)) or "none"
            raise ValueError(f"`--history`: {shown} is not a privaudit history store (its tables: {describe_value(found)}); give another --history path")
        for kind, name, sql in objects:
            own = (kind, name) in _OURS and (kind != "index" or " ".join(str(sql).split()) == _INDEX)
            if not own:
                raise ValueError(
                    f"`--history`: {shown} holds a {kind} {describe_value(name)} that privaudit does not create (a store holds only its table and index);"
                    " give another --history path"
                )
        columns = tuple((row[1], str(row[2]).upper(), row[3], row[4], row[5], row[6]) for row in connection.execute("PRAGMA table_xinfo(audits)"))
        if columns == _XINFO:
            return "store"
        if columns == _XINFO[: len(_COLUMNS_V1)] and version < SCHEMA_VERSION:
            return "v1"
        names = ", ".join(column[0] for column in columns)
        raise ValueError(
            f"`--history`: {shown} is not a privaudit history store (its audits table has other columns: {describe_value(names)}); give another --history path"
        )

    def append(self, data: dict, *, model_id: str, release: str | None = None) -> int:
        """Store one results dict for ``model_id`` with its lineage and identity; return its id (HistoryLockedError if the store stays locked)."""
        from .history_ids import lineage_of, model_identity
        from .report.sections import section_for

        check_label(model_id, "model_id")
        if model_id is None:
            raise ValueError("`model_id` must be a non-empty string, got None")
        check_label(release, "release")
        section = section_for(data)
        created = data.get("created_at") or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        try:
            text = json.dumps(data, allow_nan=False, default=str)
        except (TypeError, ValueError, RecursionError) as error:
            raise ValueError(f"`data` must be JSON-ready results (finite numbers): {describe_value(str(error))}") from None
        row = (
            model_id,
            section.audit,
            release,
            str(created),
            _finite(section.value) if section.value is not None else None,
            section.label,
            section.kind,
            section.confidence,
            int(section.valid),
            data.get("schema_version"),
            text,
            printable(model_identity(data)),
            printable(lineage_of(data)),
        )

        def insert(connection):
            cursor = connection.execute(
                "INSERT INTO audits (model_id, audit, release, created_at, value, label, kind, confidence, valid, schema_version, results, identity, lineage)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            return int(cursor.lastrowid)

        return self._retry(self._write, insert)

    def _select(self, query: str, parameters=()) -> list:
        """Rows of ``query``; in a store written before lineages, ``identity`` and ``lineage`` read as NULL."""

        def run(connection):
            state = self._inspect(connection)
            if state == "empty":
                return []
            text = query if state == "store" else query.replace("identity, lineage", "NULL, NULL")
            return connection.execute(text, parameters).fetchall()

        return self._retry(self._read, run)

    def records(self, *, model_id: str | None = None, audit: str | None = None) -> list[AuditRecord]:
        """Stored audits in the order they were appended, optionally of one model and/or family (ValueError for a damaged row)."""
        query = "SELECT id, model_id, audit, release, created_at, value, label, kind, confidence, valid, results, identity, lineage FROM audits"
        clauses = [(name, value) for name, value in (("model_id", model_id), ("audit", audit)) if value is not None]
        if clauses:
            query += " WHERE " + " AND ".join(f"{name} = ?" for name, _ in clauses)
        rows = self._select(query + " ORDER BY id", [value for _, value in clauses])
        return [self._record(row) for row in rows]

    def _record(self, row) -> AuditRecord:
        """A checked record: a row edited by hand or by another program gives a ValueError, not a wrong number."""
        where = f"`--history`: {describe_value(str(self.path))} row {describe_value(row[0])}"

        def number(value, column):
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}: `{column}` must be a number or empty, got {describe_value(value)}")
            return _finite(value)

        def text(value, column, optional=False):
            if value is None and optional:
                return None
            if not isinstance(value, str):
                raise ValueError(f"{where}: `{column}` must be text, got {describe_value(value)}")
            return value

        identifier, model_id, audit, release, created_at, value, label, kind, confidence, valid, results, identity, lineage = row
        if isinstance(identifier, bool) or not isinstance(identifier, int):
            raise ValueError(f"{where}: `id` must be an integer")
        if valid not in (0, 1):
            raise ValueError(f"{where}: `valid` must be 0 or 1, got {describe_value(valid)}")
        try:
            data = json.loads(text(results, "results"))
        except RecursionError:
            raise ValueError(f"{where}: `results` is nested too deeply") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: `results` is not valid JSON: {error.msg}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{where}: `results` must be a JSON object, got {type(data).__name__}")
        return AuditRecord(
            identifier,
            text(model_id, "model_id"),
            text(audit, "audit"),
            text(release, "release", optional=True),
            text(created_at, "created_at"),
            number(value, "value"),
            text(label, "label"),
            text(kind, "kind"),
            number(confidence, "confidence"),
            bool(valid),
            data,
            text(identity, "identity", optional=True),
            text(lineage, "lineage", optional=True),
        )

    def models(self) -> list[tuple[str, str, int]]:
        """(model id, audit family, number of audits) for everything stored."""
        return self._select("SELECT model_id, audit, COUNT(*) FROM audits GROUP BY model_id, audit ORDER BY model_id, audit")


def _lineage_key(record: AuditRecord, across_data: bool) -> tuple:
    return (record.model_id, record.audit, None if across_data else record.lineage)


def compare(records: list[AuditRecord], *, tolerance: float = 0.1, across_data: bool = False) -> list[Change]:
    """Changes between consecutive audits of one lineage, family and headline quantity, on their numbers.

    A lineage is the model id and, unless ``across_data``, the data
    fingerprint stored with it (:func:`privaudit.history_ids.lineage_of`):
    under one ``--model-id``, data of another schema starts a new lineage.
    The quantity is :func:`quantity` of the label with the headline's kind
    and confidence, so an ε bound whose label names another chosen attack
    or ceiling is still compared. ``regression`` is True when the later
    number exceeds the earlier one by more than ``tolerance`` (absolute, in
    the headline's unit). Audits whose headline is missing give a change of
    None and no regression.
    """
    tolerance = check_positive(tolerance, "tolerance", allow_zero=True)
    last: dict[tuple, AuditRecord] = {}
    changes = []
    for record in records:
        key = (*_lineage_key(record, across_data), quantity(record.label), record.kind, record.confidence)
        before = last.get(key)
        if before is not None:
            change = None if before.value is None or record.value is None else record.value - before.value
            changes.append(Change(before=before, after=record, change=change, regression=change is not None and change > tolerance))
        last[key] = record
    return changes


def new_lineages(records: list[AuditRecord], *, across_data: bool = False) -> set[int]:
    """The ids of audits that start a new lineage under a model id and family already holding another (another dataset or architecture)."""
    if across_data:
        return set()
    seen: dict[tuple, set] = {}
    starts = set()
    for record in records:
        lineages = seen.setdefault((record.model_id, record.audit), set())
        if lineages and record.lineage not in lineages:
            starts.add(record.id)
        lineages.add(record.lineage)
    return starts


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
