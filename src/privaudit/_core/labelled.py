"""The user's labelled tabular data (.npz, .csv, .parquet): features, labels, and how the label column was decided.

One rule for every file, so that no command ever guesses which column holds
the labels (:func:`read_labelled`):

1. **Explicit**: ``label_col`` (``--label-col``, config ``label_col``) names
   a column of a ``.csv`` (with a header row) or ``.parquet``; an ``.npz``
   names its labels by key, the array ``y``.
2. **Checked**: without ``label_col``, a column *could be the label* when
   every value in it is a whole number (any sign, any count of distinct
   values: labels -1/+1 or 100 classes are still labels someone may have
   meant), or when its header names it like a label (:data:`LABEL_NAMES`,
   any case, whatever it holds). Exactly one such column is the label.
3. **Refused**: two or more such columns (a 0/1 feature beside the label, a
   named column beside a whole-number one), or none; the message names
   ``--label-col`` and lists the candidates.

The position of a column never decides: a file with the label first and a
0/1 feature last is refused, not read with the feature as the label. No
"few distinct values" cut-off narrows the candidates, since it could drop a
many-class label column and leave a binary feature as the only candidate.
The decision travels with the data as a
:class:`~privaudit._core.conventions.Convention`, which the audits record.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from .conventions import Convention, checked, explicit
from .files import not_a_file
from .messages import describe_value
from .readers import MAX_TEXT_BYTES, read_npz

__all__ = ["LABELLED_SUFFIXES", "LABEL_NAMES", "LabelledData", "label_candidates", "read_labelled"]

LABELLED_SUFFIXES = (".npz", ".csv", ".parquet")
LABEL_NAMES = ("label", "labels", "y", "target", "class")
_LABEL_OPTION = "`--label-col` (`label_col`)"


@dataclasses.dataclass(frozen=True, eq=False)
class LabelledData:
    """Features ``x`` (n, d) float64, integer labels ``y`` (n,), ``label``: how the label column was decided, and the ``columns`` asked for by name."""

    x: np.ndarray
    y: np.ndarray
    label: Convention
    columns: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    feature_names: tuple[str, ...] | None = None  # the header's names of the columns of x (a .csv or .parquet with a header)
    classes: tuple[str, ...] = ()  # text labels in the order of their codes 0, 1, ... (empty: the labels were numbers)


#: cells read as a missing value (never imputed): refused with the column's name
MISSING_CELLS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})


def _cell_number(cell: str) -> float | None:
    try:
        return float(cell.strip().strip('"'))
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class _Table:
    """A table's header (or None), its columns (float64, or object arrays of text) and where its rows came from."""

    header: list[str] | None
    columns: list[np.ndarray]
    lines: list[int]
    positions: tuple[int, ...] = ()  # each column's index in the file (empty: as listed), so messages count columns as the user does
    width: int = 0  # the file's number of columns (0: as listed)
    respelled: dict[int, tuple[str, str]] = dataclasses.field(default_factory=dict)  # file column -> two spellings of one number ('01', '1')

    def where(self, index: int) -> str:
        """ "'diagnosis' (column 5 of 10)": a column named as in the file, counted among all of its columns."""
        position = self.positions[index] if self.positions else index
        where = f"column {position + 1} of {self.width or len(self.columns)}"
        return where if self.header is None else f"{self.header[index]!r} ({where})"

    def without(self, drop: set[int]) -> _Table:
        """The table less the columns ``drop``, each column keeping its place in the file."""
        keep = [index for index in range(len(self.columns)) if index not in drop]
        positions = tuple(self.positions[index] if self.positions else index for index in keep)
        header = None if self.header is None else [self.header[index] for index in keep]
        return _Table(header, [self.columns[index] for index in keep], self.lines, positions, self.width or len(self.columns), self.respelled)

    def position(self, index: int) -> int:
        """The file's index of column ``index``."""
        return self.positions[index] if self.positions else index

    def text(self) -> set[int]:
        return {index for index, column in enumerate(self.columns) if column.dtype == object}

    def numbers(self) -> np.ndarray:
        """The table as float64, text columns NaN (no label candidate by value, never a feature)."""
        return np.column_stack([np.full(len(self.lines), np.nan) if column.dtype == object else column for column in self.columns])


def _column_name(header: list[str] | None, index: int, width: int) -> str:
    return f"column {index + 1} of {width}" if header is None else f"column {header[index]!r} (column {index + 1} of {width})"


def _typed_column(
    cells: list[str], lines: list[int], header: list[str] | None, index: int, width: int, path: Path, name: str, text: bool = False
) -> np.ndarray:
    """A column as float64 when every cell is a finite number, else its text verbatim; a missing cell is refused, naming the column."""
    for cell, line in zip(cells, lines):
        if cell.strip().strip('"').lower() in MISSING_CELLS:
            raise ValueError(
                f"`{name}` {_column_name(header, index, width)} has a missing value ({describe_value(cell)}) on line {line} of {str(path)!r}; "
                "privaudit never imputes: fill it or drop the row"
            )
    numbers = [None] if text else [_cell_number(cell) for cell in cells]
    if all(value is not None for value in numbers):
        values = np.array(numbers, dtype=np.float64)
        if not np.isfinite(values).all():
            line = lines[int(np.flatnonzero(~np.isfinite(values))[0])]
            raise ValueError(f"`{name}` {_column_name(header, index, width)} must hold finite numbers, got an infinity on line {line} of {str(path)!r}")
        return values
    return np.array([cell.strip() for cell in cells], dtype=object)


def _read_csv_table(path: Path, name: str, text_cols: tuple[str, ...] = ()) -> _Table:
    """The table of a CSV file; a first row without a single number is the header."""
    import csv
    import io

    if path.stat().st_size > MAX_TEXT_BYTES:
        raise ValueError(f"`{name}`: {str(path)!r} is larger than {MAX_TEXT_BYTES} bytes")
    try:
        text = path.read_text(encoding="utf-8-sig")
        rows = [(line, row) for line, row in enumerate(csv.reader(io.StringIO(text)), 1) if any(cell.strip() for cell in row)]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {error}") from None
    header = None
    if rows and all(_cell_number(cell) is None for cell in rows[0][1]):
        header = [cell.strip() for cell in rows[0][1]]
        rows = rows[1:]
    if not rows:
        raise ValueError(f"`{name}`: {str(path)!r} has no rows of data")
    width = len(header) if header is not None else len(rows[0][1])
    for line, row in rows:
        if len(row) != width:
            raise ValueError(f"`{name}`: {str(path)!r} line {line} has {len(row)} cells, expected {width}")
    lines = [line for line, _ in rows]
    as_text = [header is not None and header[index] in text_cols for index in range(width)]
    columns = [_typed_column([row[index] for _, row in rows], lines, header, index, width, path, name, as_text[index]) for index in range(width)]
    respelled = {}
    for index, column in enumerate(columns):  # '01' and '1' are one number but may be two classes to the user: never merged silently
        if column.dtype != object:
            spellings: dict[float, str] = {}
            for (_, row), value in zip(rows, column):
                first = spellings.setdefault(float(value), row[index].strip().strip('"'))
                if first != row[index].strip().strip('"'):
                    respelled[index] = (first, row[index].strip().strip('"'))
                    break
    return _Table(header, columns, lines, respelled=respelled)


def _read_parquet_table(path: Path, name: str, text_cols: tuple[str, ...] = ()) -> _Table:
    from .extras import MissingExtraError, missing_extra_message, require

    if path.stat().st_size > MAX_TEXT_BYTES:
        raise ValueError(f"`{name}`: {str(path)!r} is larger than {MAX_TEXT_BYTES} bytes")
    pandas = require("pandas", purpose="reading a .parquet file")
    require("pyarrow", purpose="reading a .parquet file")  # pandas' parquet engine
    try:
        frame = pandas.read_parquet(path)
    except ImportError:
        raise MissingExtraError(str(missing_extra_message("pyarrow", "reading a .parquet file")), name="pyarrow") from None
    except Exception as error:  # pyarrow raises its own types for a file that is not parquet
        raise ValueError(f"`{name}`: cannot read {str(path)!r} as a parquet file: {type(error).__name__}: {describe_value(str(error))}") from None
    header = [str(column) for column in frame.columns]
    if not len(frame):
        raise ValueError(f"`{name}`: {str(path)!r} has no rows of data")
    lines = list(range(1, len(frame) + 1))
    columns = []
    for index, column in enumerate(frame.columns):
        series = frame[column]
        missing = series.isna().to_numpy()
        if missing.any():
            raise ValueError(
                f"`{name}` {_column_name(header, index, len(header))} has {int(missing.sum())} missing value(s), the first in row "
                f"{int(np.flatnonzero(missing)[0]) + 1} of {str(path)!r}; privaudit never imputes: fill them or drop the rows"
            )
        if header[index] in text_cols:  # ids kept as written: an integer beyond 2^53 would not survive a float
            columns.append(np.array([str(value) for value in series], dtype=object))
        elif pandas.api.types.is_bool_dtype(series) or pandas.api.types.is_numeric_dtype(series) and not pandas.api.types.is_complex_dtype(series):
            values = series.to_numpy(dtype=np.float64)
            if not np.isfinite(values).all():
                raise ValueError(f"`{name}` {_column_name(header, index, len(header))} must hold finite numbers (no infinity) in {str(path)!r}")
            columns.append(values)
        else:
            columns.append(np.array([str(value) for value in series], dtype=object))
    return _Table(header, columns, lines)


def label_candidates(header: list[str] | None, table: np.ndarray, text: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Indices of the columns of ``table`` that could be the label: whole numbers only, text (``text``), or a header name in :data:`LABEL_NAMES`.

    >>> label_candidates(["label", "age", "flag"], np.array([[1.0, 0.5, 0.0], [0.0, 1.5, 1.0]]))
    [0, 2]
    >>> label_candidates(["target", "a"], np.array([[0.5, 2.0], [1.5, 3.0]]))  # a fractional "target" still counts
    [0, 1]
    >>> label_candidates(None, np.array([[0.5, -1.0], [1.5, 1.0]]))  # labels -1/+1 are a candidate (refused later as labels)
    [1]
    """
    whole = np.all(table == np.round(table), axis=0)
    named = [index for index, column in enumerate(header or ()) if column.strip().lower() in LABEL_NAMES]
    return sorted({*np.flatnonzero(whole).tolist(), *named, *text})


def closest(name: str, choices: list[str]) -> str:
    """ "; did you mean 'diagnosis'?" for the choice closest to ``name`` (difflib), or "" when none is close.

    >>> closest("diagnosys", ["age", "diagnosis"]), closest("zzz", ["age"])
    ("; did you mean 'diagnosis'?", '')
    """
    import difflib

    match = difflib.get_close_matches(name, choices, n=1, cutoff=0.6) or [choice for choice in choices if choice.lower() == str(name).lower()]
    return f"; did you mean {match[0]!r}?" if match else ""


def column_list(header: list[str]) -> str:
    """Every column name, never cut: the user needs the whole list to pick one.

    >>> column_list(["a", "b"])
    "'a', 'b'"
    """
    from .messages import printable

    return ", ".join(printable(repr(column)) for column in header)


def _decide_label(table: _Table, path: Path, name: str, label_col: str | None) -> tuple[int, Convention]:
    """The index of the label column and the convention that decided it (the rule in the module docstring)."""
    header, width = table.header, len(table.columns)
    convention = f"label column of {name}"
    if label_col is not None:
        if header is None:
            raise ValueError(f"{_LABEL_OPTION} {describe_value(label_col)} needs a header row naming the columns of {str(path)!r}")
        if header.count(label_col) != 1:
            found = "has no column" if label_col not in header else f"has {header.count(label_col)} columns named"
            raise ValueError(
                f"{_LABEL_OPTION}: {str(path)!r} {found} {describe_value(label_col)}{closest(label_col, header)} Its columns are {column_list(header)}"
            )
        index = header.index(label_col)
        return index, explicit(convention, table.where(index), "--label-col (config `label_col`)")
    candidates = label_candidates(header, table.numbers(), table.text())
    if len(candidates) != 1:
        shown = ", ".join(table.where(index) for index in candidates[:6]) + (", ..." if len(candidates) > 6 else "")
        why = f"{len(candidates)} of its columns could be it ({shown})" if candidates else "none of its columns could be it"
        raise ValueError(
            f"{_LABEL_OPTION} must name the label column of `{name}` {str(path)!r}: {why}; a column could be the label when it "
            f"holds only whole numbers or text, or is named {', '.join(LABEL_NAMES)}, and its position never decides"
        )
    index = candidates[0]
    evidence = f"the only column of whole numbers or text, or named {'/'.join(LABEL_NAMES)}; the other {width - 1} hold fractions"
    return index, checked(convention, table.where(index), evidence)


def _take_columns(table: _Table, path: Path, name: str, names: tuple[str, ...]) -> tuple[_Table, dict[str, np.ndarray]]:
    """``table`` without the columns ``names`` (each named once in its header), and those columns by name (text kept verbatim)."""
    if not names:
        return table, {}
    header = table.header
    found = {}
    for column in names:
        if header is None or header.count(column) != 1:
            columns = "no header row" if header is None else f"columns {column_list(header)}"
            hint = "" if header is None else closest(column, header)
            raise ValueError(f"`{name}` must have one column named {describe_value(column)}{hint}, got {columns} in {str(path)!r}")
        found[column] = header.index(column)
    rest = table.without(set(found.values()))
    return rest, {column: table.columns[index] for column, index in found.items()}


def _labels(values: np.ndarray, label: Convention) -> tuple[np.ndarray, Convention, tuple[str, ...]]:
    """Integer labels: numbers as they are, text mapped to 0, 1, ... in sorted order (recorded in the convention)."""
    if values.dtype != object:
        return values, label, ()
    classes = tuple(sorted(set(values.tolist())))
    mapping = ", ".join(f"{printable_label(value)} -> {code}" for code, value in enumerate(classes))
    value = f"{label.value}; text labels mapped in sorted order: {mapping}"
    codes = np.searchsorted(np.array(classes, dtype=object), values)
    return codes.astype(np.float64), dataclasses.replace(label, value=value), classes


def printable_label(value: str) -> str:
    return describe_value(value, limit=40)


def _features(table: _Table, path: Path, name: str) -> np.ndarray:
    """The feature columns as float64; a text column among them is refused, naming it, its first non-number and the options that take text."""
    for index in sorted(table.text()):
        column = table.columns[index]
        row = next(row for row, cell in enumerate(column) if _cell_number(str(cell)) is None)
        raise ValueError(
            f"`{name}` column {table.where(index)} holds text ({describe_value(column[row])} on line {table.lines[row]} "
            f"of {str(path)!r}): a feature must be a number; name it with `--label-col` if it is the label, or `--id-col` if it is a record id"
        )
    return table.numbers()


def read_labelled(
    path: str | os.PathLike[str], name: str, *, label_col: str | None = None, other_cols: tuple[str, ...] = (), text_cols: tuple[str, ...] = ()
) -> LabelledData:
    """Features, integer labels and the label convention of a labelled dataset file; ``name`` is the option shown in errors.

    * ``.npz``: arrays ``x`` (n, d) and ``y`` (n,), read by
      :func:`~privaudit._core.readers.read_npz` (no pickle, headers checked,
      no NaN); the labels are ``y`` by key, and ``label_col`` is refused;
    * ``.csv``: numbers, one example per row; a first row without a single
      number is the header;
    * ``.parquet``: the same, read with pandas and pyarrow (the ``parquet``
      extra).

    The label column of a ``.csv`` or ``.parquet`` is ``label_col``, or the
    one column that could be the label by the module's rule; two or more
    candidates (or none) are refused with a message naming ``--label-col``.
    Labels must be integers 0, 1, ...; every cell must be a finite number.
    ``other_cols`` names columns that are neither features nor the label
    (record ids, membership flags): they are taken out before the label is
    decided and returned in ``columns`` (in an ``.npz``, arrays by key);
    those also in ``text_cols`` (record ids) keep a file's cells verbatim as
    text. A label column of text is mapped to 0, 1, ... in sorted order
    (``classes``, and the convention records the mapping); a missing cell is
    refused, naming its column.
    Each failure is a ValueError naming ``name`` (or ``--label-col``).

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> file = os.path.join(folder, "d.csv")
    >>> _ = open(file, "w").write("a,label,b\\n0.5,1,2.5\\n1.5,0,3.5\\n")
    >>> data = read_labelled(file, "--data")
    >>> data.x.tolist(), data.y.tolist(), data.label.describe()
    ([[0.5, 2.5], [1.5, 3.5]], [1, 0], "label column of --data: 'label' (column 2 of 3) (checked: the only column of whole numbers ...)")
    >>> _ = open(file, "w").write("label,a,flag\\n1,0.5,0\\n0,1.5,1\\n")
    >>> read_labelled(file, "--members")
    Traceback (most recent call last):
    ...
    ValueError: `--label-col` (`label_col`) must name the label column of `--members` '...d.csv': 2 of its columns could be it ('label' (column 1 of 3), 'flag' (column 3 of 3)); ...
    >>> read_labelled(file, "--members", label_col="label").y.tolist()
    [1, 0]
    >>> _ = open(file, "w").write("id,a,label\\n17,0.5,1\\n23,1.5,0\\n")
    >>> data = read_labelled(file, "--data", other_cols=("id",))  # the whole-number ids are no label candidate
    >>> data.x.tolist(), data.y.tolist(), data.columns["id"].tolist()
    ([[0.5], [1.5]], [1, 0], [17.0, 23.0])
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in LABELLED_SUFFIXES:
        raise ValueError(f"`{name}` must be a .npz, .csv or .parquet file, got {str(path)!r}")
    if not path.is_file():
        reason = not_a_file(path)
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {reason}")
    feature_names: tuple[str, ...] | None = None
    classes: tuple[str, ...] = ()
    if suffix == ".npz":
        if label_col is not None:
            raise ValueError(f"{_LABEL_OPTION} names a column of a .csv or .parquet file; {str(path)!r} is an .npz, whose labels are its array 'y'")
        arrays = read_npz(path, name, ("x", "y", *other_cols))
        x, y = np.asarray(arrays["x"], dtype=np.float64), np.asarray(arrays["y"])
        columns = {column: np.asarray(arrays[column], dtype=np.float64) for column in other_cols}
        label = explicit(f"label column of {name}", "array 'y'", "the .npz key 'y' (by name, not position)")
    else:
        table = _read_csv_table(path, name, text_cols) if suffix == ".csv" else _read_parquet_table(path, name, text_cols)
        table, columns = _take_columns(table, path, name, other_cols)
        if not table.columns:
            raise ValueError(f"`{name}` must hold features and a label column besides {describe_value(list(other_cols))} in {str(path)!r}")
        column, label = _decide_label(table, path, name, label_col)
        if table.position(column) in table.respelled:
            first, other = table.respelled[table.position(column)]
            raise ValueError(
                f"`{name}` label column {table.where(column)} writes one number two ways ({describe_value(first)} and {describe_value(other)}) "
                f"in {str(path)!r}: are they one class or two? Write each class one way"
            )
        y, label, classes = _labels(table.columns[column], label)
        features = table.without({column})
        if features.header is not None and features.columns:
            feature_names = tuple(features.header)
        x = _features(features, path, name) if features.columns else np.empty((len(y), 0))
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1 or y.shape != (len(x),):
        raise ValueError(
            f"`{name}` must hold features x of shape (n, d) with d >= 1 and n labels, got x of shape {describe_value(x.shape)} "
            f"and labels of shape {describe_value(y.shape)} in {str(path)!r}"
        )
    if any(values.shape != y.shape for values in columns.values()):
        raise ValueError(f"`{name}`: arrays {describe_value(list(other_cols))} must hold one value per record ({len(y)}) in {str(path)!r}")
    if y.dtype.kind == "b":
        y = y.astype(np.int64)
    if y.dtype.kind not in "iuf" or not np.all(y == np.round(y)) or (y < 0).any():
        raise ValueError(
            f"`{name}` must hold integer class labels 0, 1, ... (or text labels) in {str(path)!r}, got {describe_value(np.unique(y)[:5].tolist())}"
        )
    return LabelledData(x=x, y=y.astype(np.int64), label=label, columns=columns, feature_names=feature_names, classes=classes)
