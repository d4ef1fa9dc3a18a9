"""Reading the datasets a mechanism runs on: ``.npy`` or ``.csv``, one record per row (or per entry of a 1-D array).

``.npy`` keeps its dtype (integers stay integers, so the neighbour search
adds integer records) and is read without pickle; ``.csv`` is read as
floats, with an optional header row (a first row that is not all numbers).
A one-column file is a 1-D dataset. Every value must be a finite number.

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as folder:
...     path = os.path.join(folder, "d.csv")
...     _ = open(path, "w").write("age,income\\n30,1.5\\n40,2\\n")
...     read_dataset(path, "--dataset")
array([[30. ,  1.5],
       [40. ,  2. ]])
>>> read_dataset("missing.txt", "--dataset")
Traceback (most recent call last):
...
ValueError: `--dataset` must be a .npy or .csv file, got 'missing.txt'
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._core.readers import read_npy
from .._core.validation import as_real_array

__all__ = ["read_dataset"]


def _read_csv(path: Path) -> np.ndarray:
    lines = [line for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
    if lines:
        try:
            [float(cell) for cell in lines[0].split(",")]
        except ValueError:
            lines = lines[1:]  # a header row
    return np.loadtxt(lines, delimiter=",", ndmin=2, dtype=np.float64)


def read_dataset(path: str | Path, name: str) -> np.ndarray:
    """The records in ``path`` (1-D for one column); a ValueError naming ``name`` otherwise."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".csv"):
        raise ValueError(f"`{name}` must be a .npy or .csv file, got {str(path)!r}")
    if not path.is_file():
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: file not found")
    try:
        raw = read_npy(path, name) if suffix == ".npy" else _read_csv(path)  # a .npy header bounded before anything is allocated
    except ValueError as error:
        raise ValueError(str(error) if str(error).startswith(f"`{name}`") else f"`{name}`: cannot read {str(path)!r}: {error}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {error}") from None
    values = as_real_array(raw, name)
    if raw.ndim == 2 and raw.shape[1] == 1:
        raw, values = raw[:, 0], values[:, 0]
    if values.ndim not in (1, 2) or values.shape[0] == 0:
        raise ValueError(f"`{name}` must hold at least one record, as a 1-D or 2-D array, got shape {values.shape}")
    bad = int(np.count_nonzero(~np.isfinite(values)))
    if bad:
        raise ValueError(f"`{name}` must contain only finite numbers, got {bad} NaN or infinite value(s)")
    return np.asarray(raw) if raw.dtype.kind in "iu" else values
