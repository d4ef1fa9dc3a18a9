"""The versioned schema of ``results.json`` files, and the stamp every writer adds.

Every ``results.json`` written by privaudit carries ``schema_version`` (an
integer, bumped when a field changes meaning or disappears), ``audit`` (the
audit family, e.g. ``"dpsgd"``), ``machine`` and ``created_at`` next to the
result's own fields. The JSON Schema of version 1 is
``privaudit/schemas/results-v1.json``; ``docs/results-schema.md`` explains
each field. Results hold only JSON: never pickle.

>>> data = stamp_results({"result_type": "Example", "versions": {}}, audit="dpsgd")
>>> data["schema_version"], data["audit"], sorted(data["machine"])
(1, 'dpsgd', ['cpu_count', 'platform', 'processor', 'python'])
>>> check_results(data) is data
True
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["SCHEMA_VERSION", "check_results", "load_schema", "machine_info", "stamp_results", "validate_results", "write_results"]

SCHEMA_VERSION = 1
_REQUIRED = ("schema_version", "audit", "result_type", "versions")


def machine_info() -> dict[str, Any]:
    """The machine a result was computed on (no host name: results are shared).

    >>> machine_info()["cpu_count"] >= 1
    True
    """
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count() or 1,
        "python": platform.python_version(),
    }


def stamp_results(data: dict[str, Any], *, audit: str) -> dict[str, Any]:
    """``data`` with ``schema_version``, ``audit``, ``machine`` and ``created_at`` (UTC) first.

    >>> list(stamp_results({"epsilon": 1.0}, audit="blackbox"))[:2]
    ['schema_version', 'audit']
    """
    stamp = {
        "schema_version": SCHEMA_VERSION,
        "audit": audit,
        "machine": machine_info(),
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    return {**stamp, **{key: value for key, value in data.items() if key not in stamp}}


@cache
def _schema_text(version: int) -> str:
    return resources.files(__name__).joinpath(f"results-v{version}.json").read_text(encoding="utf-8")


def load_schema(version: int = SCHEMA_VERSION) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``results.json`` files of ``version``.

    >>> load_schema()["properties"]["schema_version"]["const"]
    1
    """
    if version != SCHEMA_VERSION:
        raise ValueError(f"`version` must be one of [{SCHEMA_VERSION}], got {version!r}")
    return json.loads(_schema_text(version))


def check_results(data: Any, source: str = "results") -> dict[str, Any]:
    """Check the envelope of a results dict (the schema's required fields); return it unchanged.

    A light check that needs no JSON Schema library: the object, its
    required fields and its version. The full schema is checked in the tests.

    >>> check_results({"schema_version": 2, "audit": "x", "result_type": "R", "versions": {}})
    Traceback (most recent call last):
    ...
    ValueError: `results` has schema_version 2; this privaudit reads version 1
    """
    if not isinstance(data, dict):
        raise ValueError(f"`{source}` must be a JSON object, got {type(data).__name__}")
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        raise ValueError(f"`{source}` lacks the field(s) {', '.join(missing)} of results schema v{SCHEMA_VERSION}")
    if data["schema_version"] != SCHEMA_VERSION:
        raise ValueError(f"`{source}` has schema_version {data['schema_version']!r}; this privaudit reads version {SCHEMA_VERSION}")
    return data


@cache
def _validator():
    from .._core.extras import require

    jsonschema = require("jsonschema", purpose="checking results against the JSON Schema")
    schema = load_schema()
    return jsonschema.Draft202012Validator(schema)


def validate_results(data: Any, source: str = "results") -> dict[str, Any]:
    """Check ``data`` against the full JSON Schema of ``results.json``; return it unchanged.

    >>> validate_results(stamp_results({"result_type": "R", "versions": {"privaudit": "0"}}, audit="x"))["audit"]
    'x'
    >>> validate_results({"schema_version": 1, "audit": 3, "result_type": "R", "versions": {"privaudit": "0"}})
    Traceback (most recent call last):
    ...
    ValueError: `results` does not match results schema v1 at `audit`: 3 is not of type 'string'
    """
    check_results(data, source)
    error = next(iter(sorted(_validator().iter_errors(data), key=lambda e: list(e.path))), None)
    if error is not None:
        where = ".".join(str(part) for part in error.path) or "(top level)"
        raise ValueError(f"`{source}` does not match results schema v{SCHEMA_VERSION} at `{where}`: {error.message[:200]}")
    return data


def write_results(path: Any, data: dict[str, Any], source: str = "results") -> dict[str, Any]:
    """Validate ``data`` against the results schema, then write it to ``path`` atomically; return it.

    The one way a ``results.json`` is written (:func:`privaudit.report.runs.write_run`,
    the demo's summary): nothing reaches the disk that the schema refuses.

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "results.json"
    ...     _ = write_results(path, stamp_results({"result_type": "R", "versions": {"privaudit": "0"}}, audit="x"))
    ...     json.loads(path.read_text())["audit"]
    'x'
    """
    from .._core.files import write_json_atomic

    validate_results(data, source)
    write_json_atomic(path, data)
    return data
