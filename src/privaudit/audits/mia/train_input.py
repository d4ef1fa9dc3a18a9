"""What the user's ``--train`` function receives as x_train (``--train-input``): a float32 NumPy array, or a pandas DataFrame with the file's column names."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._core.extras import require
from ..._core.labelled import column_list

__all__ = ["TRAIN_INPUTS", "as_train_input", "describe_train_input", "train_input_names"]


#: what a ``--train`` function receives as x_train: "array" (a float32 NumPy array, the default) or "dataframe" (pandas, the file's column names)
TRAIN_INPUTS = ("array", "dataframe")


def train_input_names(pool: Any, train_input: str = "array") -> tuple[str, ...] | None:
    """The column names of the DataFrame a ``--train`` function receives (``dataframe``), or None when it receives a NumPy array (``array``).

    ``array`` is the default: every training function written before the
    option exists (a torch loop calling ``torch.from_numpy``) keeps working.
    ``dataframe`` gives a ``.csv`` or ``.parquet`` ``--data``'s column names,
    so a ColumnTransformer can select columns by name; data without names
    is refused.

    >>> from privaudit.audits.mia.training import Pool
    >>> named = Pool(np.zeros((2, 2), np.float32), np.zeros(2, np.int64), "p.csv", feature_names=("a", "b"))
    >>> train_input_names(named) is None, train_input_names(named, "dataframe")
    (True, ('a', 'b'))
    >>> train_input_names(Pool(np.zeros((2, 2), np.float32), np.zeros(2, np.int64), "p.npz"), "dataframe")
    Traceback (most recent call last):
    ...
    ValueError: `--train-input` dataframe needs a .csv or .parquet `--data` with a header row naming its columns, got 'p.npz'
    """
    if train_input not in TRAIN_INPUTS:
        raise ValueError(f"`--train-input` must be one of {', '.join(TRAIN_INPUTS)}, got {train_input!r}")
    if train_input == "array":
        return None
    if pool.feature_names is None:
        raise ValueError(f"`--train-input` dataframe needs a .csv or .parquet `--data` with a header row naming its columns, got {pool.source!r}")
    return pool.feature_names


def as_train_input(x: np.ndarray, names: tuple[str, ...] | None) -> Any:
    """``x`` as a pandas DataFrame with the file's column ``names``, or as is when ``names`` is None."""
    if names is None:
        return x

    pandas = require("pandas", purpose="`--train-input` dataframe")
    return pandas.DataFrame(x, columns=list(names))


def describe_train_input(x: np.ndarray, names: tuple[str, ...] | None) -> str:
    """ "x_train is a DataFrame with columns [...]" (every name, never cut), or the array's dtype and shape."""
    if names is None:
        return f"x_train is a {x.dtype} NumPy array of shape {x.shape} (no column names: `--train-input dataframe` passes a .csv's or .parquet's)"
    return f"x_train is a DataFrame of {x.shape[0]} rows with columns [{column_list(list(names))}]"
