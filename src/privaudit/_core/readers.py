"""Reading score and loss files for the command line: .npy, .csv or plain text.

* ``.npy``: a 1-D numeric array (or a single row or column).
* ``.csv``: one column, or a single row; a first line whose first cell is
  not a number and does not start like one (a digit, sign or point) is a
  header and is skipped. Quotes and a UTF-8 byte-order mark are tolerated.
* anything else: text with one number per line; blank lines and lines that
  start with ``#`` are ignored.

Every failure is a ValueError that names the option, e.g.
"`--canaries`: cannot read 'x.csv': file not found".

A ``.npy`` header is checked before anything is allocated: its dtype must be
real numbers (never pickled objects) and the number of values it declares
must match the bytes the file holds, so a forged header declaring 10^12
values is refused at once. An ``np.savez`` archive saved under a ``.npy``
name is refused with a clear message; :func:`read_npz` reads named arrays
from a real ``.npz`` archive with the same checks.

Labelled tabular data (features and a label column) is read by
:func:`privaudit._core.labelled.read_labelled`.
"""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from .files import not_a_file
from .messages import describe_value, printable
from .validation import as_scores

__all__ = ["MAX_TEXT_BYTES", "read_csv_rows", "read_npy", "read_npz", "read_numbers", "read_score_table"]

MAX_TEXT_BYTES = 256 * 2**20
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def _npy_header(file: IO[bytes], available: int) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, Fortran order and dtype of the .npy stream ``file``, checked against the ``available`` bytes before any allocation."""
    try:
        version = np.lib.format.read_magic(file)
    except ValueError:
        raise ValueError("not a .npy file (no NumPy magic string)") from None
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")
    try:
        shape, fortran_order, dtype = readers[version](file)
    except (ValueError, SyntaxError, TypeError) as error:  # a malformed header dict
        raise ValueError(f"malformed .npy header: {describe_value(str(error))}") from None
    if dtype.hasobject:
        raise ValueError("it holds Python objects, which are never unpickled; save an array of numbers")
    if dtype.kind not in "biuf":  # complex would lose its imaginary part silently
        raise ValueError(f"expected real numbers, got dtype {dtype}")
    count = math.prod(shape)
    needed = count * dtype.itemsize
    if needed != available - file.tell():
        raise ValueError(
            f"its header declares shape {describe_value(shape)} ({count} values, {needed} bytes) "
            f"but the file holds {max(available - file.tell(), 0)} bytes of data (truncated or forged)"
        )
    return shape, fortran_order, dtype


def _read_npy(path: Path) -> np.ndarray:
    size = path.stat().st_size
    with open(path, "rb") as file:
        if file.read(4) in _ZIP_MAGIC:
            raise ValueError("it is an .npz archive (np.savez), not one .npy array; save a single array with np.save")
        file.seek(0)
        shape, fortran_order, dtype = _npy_header(file, size)
        values = np.fromfile(file, dtype=dtype, count=math.prod(shape))
    return values.reshape(shape, order="F" if fortran_order else "C")


def read_npy(path: str | os.PathLike[str], name: str) -> np.ndarray:
    """The array in the ``.npy`` file ``path``, its header checked against the file's size before anything is allocated.

    A forged header (a shape the bytes cannot hold), Python objects, a
    non-real dtype or an ``.npz`` archive is a ValueError naming ``name``.

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> np.save(os.path.join(folder, "m.npy"), np.eye(2, dtype=bool))
    >>> read_npy(os.path.join(folder, "m.npy"), "--reference-membership").tolist()
    [[True, False], [False, True]]
    """
    path = Path(path)
    try:
        return _read_npy(path)
    except (OSError, ValueError, EOFError) as error:
        reason = getattr(error, "strerror", None) or error
        raise ValueError(f"`{name}`: cannot read {printable(repr(str(path)))} as a .npy array: {reason}") from None


def read_npz(path: str | os.PathLike[str], name: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of the ``.npz`` archive ``path``, each header checked before allocation; ``name`` is the option shown in errors.

    Refuses a file that is not a zip archive, a missing key, pickled
    objects, non-real dtypes, a header that does not match its member's
    size, and NaN or infinity.

    >>> import tempfile, os
    >>> file = os.path.join(tempfile.mkdtemp(), "m.npz")
    >>> np.savez(file, x=np.ones((2, 3)), y=np.array([0, 1]))
    >>> {key: value.shape for key, value in read_npz(file, "--members", ("x", "y")).items()}
    {'x': (2, 3), 'y': (2,)}
    >>> np.savez(file, x=np.array([np.nan]), y=np.array([0]))
    >>> read_npz(file, "--members", ("x", "y"))
    Traceback (most recent call last):
    ...
    ValueError: `--members`: array 'x' in '...m.npz' must contain only finite numbers (no NaN or infinity)
    """
    path = Path(path)
    if not path.is_file():
        reason = not_a_file(path)
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {reason}")
    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            for key in keys:
                info = members.get(f"{key}.npy")
                if info is None:
                    found = sorted(member[:-4] for member in members if member.endswith(".npy"))
                    raise ValueError(f"`{name}` must be an .npz with arrays {', '.join(repr(k) for k in keys)}, got {describe_value(found)}")
                with archive.open(info) as member:
                    shape, fortran_order, dtype = _npy_header(member, info.file_size)
                    data = member.read()
                arrays[key] = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran_order else "C").copy()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError) as error:
        raise ValueError(f"`{name}`: cannot read {str(path)!r} as an .npz archive: {describe_value(str(error))}") from None
    except ValueError as error:
        if str(error).startswith(f"`{name}`"):
            raise
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {error}") from None
    for key, values in arrays.items():
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            raise ValueError(f"`{name}`: array {key!r} in {str(path)!r} must contain only finite numbers (no NaN or infinity)")
    return arrays


def _parse_float(token: str, path: Path, line_number: int, name: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise ValueError(f"`{name}`: {str(path)!r} line {line_number}: expected a number, got {describe_value(token)}") from None


def _is_header(line: str) -> bool:
    """A CSV header: its first cell neither parses as a number nor starts like one.

    A first line such as "1.5x" is an error, not a header: a typo must never
    silently drop a value.
    """
    first = line.split(",")[0].strip().strip('"')
    try:
        float(first)
    except ValueError:
        return first[:1] not in set("0123456789+-.")
    return False


def _read_text(path: Path, name: str, *, csv: bool) -> np.ndarray:
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise ValueError(f"`{name}`: {str(path)!r} is larger than {MAX_TEXT_BYTES} bytes")
    lines = path.read_text(encoding="utf-8-sig").splitlines()  # -sig: a BOM must not turn the first number into a "header"
    rows = [(number, line.strip()) for number, line in enumerate(lines, 1) if line.strip() and not line.lstrip().startswith("#")]
    if csv and rows and _is_header(rows[0][1]):
        rows = rows[1:]
    values: list[float] = []
    for number, line in rows:
        cells = [cell.strip().strip('"') for cell in line.split(",")] if csv else [line]
        if len(cells) > 1 and len(rows) > 1:
            raise ValueError(f"`{name}`: {str(path)!r} must have one column or one row, line {number} has {len(cells)}")
        values.extend(_parse_float(cell, path, number, name) for cell in cells)
    return np.asarray(values, dtype=np.float64)


def read_numbers(path: str | os.PathLike[str], name: str) -> np.ndarray:
    """Read a 1-D array of finite numbers from ``path``; ``name`` is the option shown in errors.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file (1-D, or a single row or column, of a real dtype), a
        ``.csv`` file, or a text file with one number per line.
    name : str
        The command-line option the file came from, e.g. ``"--canaries"``.

    Returns
    -------
    numpy.ndarray
        The numbers as float64, in file order.

    Raises
    ------
    ValueError
        Missing or unreadable file, a value that is not a number, NaN or
        infinity, no numbers at all, or more than one column; the message
        starts with the option name.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     file = os.path.join(folder, "scores.txt")
    ...     _ = open(file, "w").write("# losses\\n1.5\\n\\n2\\n")
    ...     read_numbers(file, "--in")
    array([1.5, 2. ])
    """
    path = Path(path)
    if not path.is_file():
        reason = not_a_file(path)
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {reason}")
    try:
        if path.suffix.lower() == ".npy":
            values = _read_npy(path)
            if values.ndim == 2 and 1 in values.shape:
                values = values.ravel()
        else:
            values = _read_text(path, name, csv=path.suffix.lower() == ".csv")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {error}") from None
    except ValueError as error:
        if str(error).startswith(f"`{name}`"):
            raise
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {error}") from None
    try:
        return as_scores(values, name)
    except ValueError as error:
        raise ValueError(f"{error} (in {str(path)!r})") from None


_TRUE, _FALSE = {"1", "true", "yes", "in", "member"}, {"0", "false", "no", "out", "non-member"}


def read_csv_rows(path: str | Path, name: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a CSV file with a header row, blank rows dropped; bounded in size, errors name ``name``.

    >>> import tempfile, os
    >>> file = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(file, "w").write("a, b\\n1,2\\n\\n3,4\\n")
    >>> read_csv_rows(file, "--scores")
    (['a', 'b'], [['a', ' b'], ['1', '2'], ['3', '4']])
    """
    import csv
    import io

    path = Path(path)
    if not path.is_file():
        reason = not_a_file(path)
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {reason}")
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise ValueError(f"`{name}`: {str(path)!r} is larger than {MAX_TEXT_BYTES} bytes")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {error}") from None
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    except csv.Error as error:
        raise ValueError(f"`{name}`: {str(path)!r} is not valid CSV: {error}") from None
    if not rows:
        raise ValueError(f"`{name}`: {str(path)!r} is empty; it needs a header row naming its columns")
    return [cell.strip() for cell in rows[0]], rows


def read_score_table(path: str | os.PathLike[str], score_column: str, member_column: str, name: str = "--scores") -> tuple[np.ndarray, np.ndarray]:
    """Scores and membership from a CSV file with a header row: two named columns, one row per example.

    The score column must hold finite numbers; the membership column 1/0,
    true/false, yes/no or in/out (any case). Every failure is a ValueError
    naming the option, the column and the line.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     file = os.path.join(folder, "s.csv")
    ...     _ = open(file, "w").write("id,score,member\\na,0.9,1\\nb,0.1,false\\n")
    ...     read_score_table(file, "score", "member")
    (array([0.9, 0.1]), array([ True, False]))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     file = os.path.join(folder, "s.csv")
    ...     _ = open(file, "w").write("score,member\\n0.9,maybe\\n")
    ...     read_score_table(file, "score", "member")
    Traceback (most recent call last):
    ...
    ValueError: `--scores`: ...s.csv' line 2: column `member` must be 1/0, true/false, yes/no or in/out, got 'maybe'
    """
    path = Path(path)
    header, rows = read_csv_rows(path, name)
    positions = {}
    for column, option in ((score_column, "--score-col"), (member_column, "--member-col")):
        if column not in header:
            raise ValueError(f"`{option}`: {str(path)!r} has no column {describe_value(column)}; its columns are {describe_value(header)}")
        positions[column] = header.index(column)
    scores, members = [], []
    for line, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            raise ValueError(f"`{name}`: {str(path)!r} line {line} has {len(row)} cells, the header {len(header)}")
        score, member = row[positions[score_column]].strip(), row[positions[member_column]].strip().lower()
        try:
            value = float(score)
        except ValueError:
            raise ValueError(f"`{name}`: {str(path)!r} line {line}: column `{score_column}` must be a number, got {describe_value(score)}") from None
        if not math.isfinite(value):
            raise ValueError(f"`{name}`: {str(path)!r} line {line}: column `{score_column}` must be finite, got {describe_value(score)}")
        if member not in _TRUE | _FALSE:
            raise ValueError(
                f"`{name}`: {str(path)!r} line {line}: column `{member_column}` must be 1/0, true/false, yes/no or in/out, got {describe_value(member)}"
            )
        scores.append(value)
        members.append(member in _TRUE)
    if not scores:
        raise ValueError(f"`{name}`: {str(path)!r} has a header but no rows")
    return np.asarray(scores, dtype=np.float64), np.asarray(members, dtype=bool)
