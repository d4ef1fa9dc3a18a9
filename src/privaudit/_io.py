"""Reading score and loss files for the command line: .npy, .csv or plain text.

* ``.npy``: a 1-D numeric array (or a single row or column).
* ``.csv``: one column, or a single row; a first line whose first cell is
  not a number and does not start like one (a digit, sign or point) is a
  header and is skipped. Quotes and a UTF-8 byte-order mark are tolerated.
* anything else: text with one number per line; blank lines and lines that
  start with ``#`` are ignored.

Every failure is a ValueError that names the option, e.g.
"`--canaries`: cannot read 'x.csv': file not found".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._core.validation import as_scores

__all__ = ["read_numbers"]


def _parse_float(token: str, path: Path, line_number: int, name: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise ValueError(f"`{name}`: {str(path)!r} line {line_number}: expected a number, got {token!r}") from None


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
    lines = path.read_text(encoding="utf-8-sig").splitlines()  # -sig: a BOM must not turn the first number into a "header"
    rows = [(number, line.strip()) for number, line in enumerate(lines, 1) if line.strip() and not line.lstrip().startswith("#")]
    if csv and rows and _is_header(rows[0][1]):
        rows = rows[1:]
    values = []
    for number, line in rows:
        cells = [cell.strip().strip("\"") for cell in line.split(",")] if csv else [line]
        if len(cells) > 1 and len(rows) > 1:
            raise ValueError(f"`{name}`: {str(path)!r} must have one column or one row, line {number} has {len(cells)}")
        values.extend(_parse_float(cell, path, number, name) for cell in cells)
    return np.asarray(values, dtype=np.float64)


def read_numbers(path, name: str) -> np.ndarray:
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
        reason = "is a directory" if path.is_dir() else "file not found"
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {reason}")
    try:
        if path.suffix.lower() == ".npy":
            values = np.load(path, allow_pickle=False)
            if values.dtype.kind not in "biuf":  # complex would lose its imaginary part silently
                raise ValueError(f"expected real numbers, got dtype {values.dtype}")
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
