"""Column kinds, a convention checked or given: ``--categorical COLS`` and ``--numeric COLS`` override the dtype's reading.

By default a column of numbers is numeric and anything else categorical
(:mod:`.table`). A survey table often codes its categories as integers
(party 0-6, an income bracket 1-24): read as numbers, DCR counts party 6 as
far from 0 and near 5, and its verdict can flip. Which reading is right
is the user's knowledge, so privaudit does not guess silently: an integer
column with at most :data:`FEW_VALUES` distinct values is named (console
and ``conventions``) as read as numbers, with the flag that changes it.

:func:`with_kinds` applies the user's flags to a table: a ``--categorical``
column's values become text (``3``, ``3.0`` and ``"3"`` are one category;
a missing value stays missing), a ``--numeric`` column's text becomes
numbers (a value that is not a number is refused, naming the flag).

>>> import pandas as pd
>>> from privaudit.audits.synthetic_data.table import read_frame
>>> table = read_frame(pd.DataFrame({"party": [0, 6, 3, 3], "income": [1.5, 2.0, 7.25, 3.0]}), "--train")
>>> [c.kind for c in with_kinds(table, ("party",), (), "--train").schema]
['categorical', 'numeric']
>>> integer_codes(table)
(('party', 3),)
>>> with_kinds(table, ("age",), (), "--train")
Traceback (most recent call last):
...
ValueError: `--categorical` names columns that `--train` does not have: ['age'] (columns: party, income)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._core.conventions import Convention, default, explicit
from .table import Table, read_frame

__all__ = ["FEW_VALUES", "READ_AS_NUMBERS", "check_kind_flags", "integer_codes", "kind_conventions", "kinds_note", "with_kinds"]

READ_AS_NUMBERS = "integer columns read as numbers"

#: an integer column with at most this many distinct values may be codes of categories (a 1-24 income bracket fits)
FEW_VALUES = 30


def check_kind_flags(categorical: Sequence[str], numeric: Sequence[str]) -> None:
    """A column named by both flags is refused."""
    both = sorted(set(categorical) & set(numeric))
    if both:
        raise ValueError(f"`--categorical` and `--numeric` both name {both}: a column is read one way")


def _text(value: Any) -> Any:
    """A cell as a category's text: whole numbers without a decimal point (3, 3.0 and '3' alike); missing stays missing."""
    import pandas as pd  # optional (the parquet extra)

    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return np.nan
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and float(value).is_integer():
        return str(int(value))
    return str(value)


def with_kinds(table: Table, categorical: Sequence[str], numeric: Sequence[str], name: str, *, check_names: bool = True) -> Table:
    """``table`` with the ``--categorical`` columns as text and the ``--numeric`` ones as numbers (a copy; the schema read again).

    ``check_names``: refuse a flag's column that ``table`` lacks (for --train;
    the other tables' columns are checked against --train's afterwards).
    """
    import pandas as pd  # optional (the parquet extra)

    if not categorical and not numeric:
        return table
    columns = list(table.frame.columns)
    for flag, names in (("--categorical", categorical), ("--numeric", numeric)):
        unknown = [column for column in names if column not in columns]
        if unknown and check_names:
            raise ValueError(f"`{flag}` names columns that `{name}` does not have: {unknown} (columns: {', '.join(columns)})")
    frame = table.frame.copy()
    for column in categorical:
        if column in frame.columns:
            frame[column] = frame[column].map(_text).astype(object)
    for column in numeric:
        if column not in frame.columns:
            continue
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = frame[column][values.isna() & frame[column].notna()]
        if len(bad):
            raise ValueError(f"`--numeric` column {column!r} of `{name}` holds values that are not numbers, e.g. {bad.iloc[0]!r}")
        frame[column] = values.astype(float)
    read = read_frame(frame, name)
    return Table(read.frame, table.ids, read.schema)


def integer_codes(table: Table) -> tuple[tuple[str, int], ...]:
    """The numeric columns whose values are all whole numbers, with at most :data:`FEW_VALUES` distinct ones: (name, distinct values)."""
    found = []
    for column in table.schema:
        if column.kind != "numeric":
            continue
        values = table.frame[column.name].dropna().to_numpy(dtype=float)
        distinct = np.unique(values)
        if len(values) and len(distinct) <= FEW_VALUES and np.all(distinct == np.round(distinct)):
            found.append((column.name, len(distinct)))
    return tuple(found)


def kind_conventions(table: Table, categorical: Sequence[str], numeric: Sequence[str]) -> tuple[Convention, ...]:
    """How the kinds were decided: the user's flags, and the integer-coded columns read as numbers by default (named, with the flag)."""
    conventions = []
    if categorical or numeric:
        given = "; ".join(
            part for part in (f"categorical: {', '.join(categorical)}" if categorical else "", f"numeric: {', '.join(numeric)}" if numeric else "") if part
        )
        conventions.append(explicit("column kinds", given, "--categorical/--numeric (config `categorical`/`numeric`)"))
    codes = [(column, count) for column, count in integer_codes(table) if column not in numeric]
    if codes:
        names = ", ".join(column for column, _ in codes)
        conventions.append(
            default(
                READ_AS_NUMBERS,
                ", ".join(f"{column} ({count} values)" for column, count in codes),
                f"whole numbers with at most {FEW_VALUES} distinct values may be codes of categories: DCR's verdict can flip with the reading; "
                f"--categorical {','.join(column for column, _ in codes)} reads {names} as categories, --numeric {','.join(c for c, _ in codes)} confirms",
            )
        )
    return tuple(conventions)


def kinds_note(conventions: Sequence[Convention]) -> str:
    """The console's line naming the integer columns read as numbers and the flag that reads them as categories ("" when none).

    >>> kinds_note([default(READ_AS_NUMBERS, "party (7 values)", "...; --categorical party reads party as categories, --numeric party confirms")])
    'note: integer columns read as numbers: party (7 values); --categorical party reads party as categories, --numeric party confirms'
    """
    for convention in conventions:
        if convention.name == READ_AS_NUMBERS:
            return f"note: {READ_AS_NUMBERS}: {convention.value}; {convention.evidence.split('; ', 1)[-1]}"
    return ""
