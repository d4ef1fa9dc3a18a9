"""The user's generator: imported, probed once on a small sample, run and its output checked; and the canaries of the bound.

The contract is ``fn(train_df, *, seed, n) -> synthetic_df``: ``train_df``
is the training table without its id column (a copy: the user's frame is
never changed), and the returned table must have the same columns, each of
the same kind, and ``n`` rows. :func:`probe_generator` calls it once on at
most :data:`PROBE_ROWS` training rows before any real generation, so a
generator that returns the wrong columns is refused in seconds. A generator
may carry a ``conventions`` attribute, ``fn.conventions(train_df) ->
tuple[Convention, ...]``: what it decided on the table itself (the SDV
adapters' detected sdtypes), recorded among the result's conventions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._core.usercode import call_user
from ...models.loading import import_callable
from .table import Table, check_same_schema, read_frame

__all__ = ["PROBE_ROWS", "generate", "load_generator", "make_canaries", "probe_generator"]

PROBE_ROWS = 50
PROBE_N = 10


class _Generator:
    """The user's generator, each call through :func:`~privaudit._core.usercode.call_user`; its attributes (``conventions``, ``claim``) read through."""

    def __init__(self, path: str, function: Callable[..., Any]) -> None:
        self._path, self._function = path, function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_user("--generator", self._path, self._function, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_path", "_function"):
            raise AttributeError(name)
        return getattr(self._function, name)


def load_generator(path: str) -> Callable[..., Any]:
    """The user's generator ``package.module:fn``; a ValueError naming ``--generator`` when it cannot be imported.

    Every call goes through :func:`~privaudit._core.usercode.call_user`: an
    exception, ``sys.exit`` or ``os._exit`` in the generator is one error
    line naming it. Its attributes (``conventions``, ``claim``) stay readable.

    >>> load_generator("json:loads")("{", seed=0, n=1)
    Traceback (most recent call last):
    ...
    privaudit._core.usercode.UserCodeError: `--generator` 'json:loads' raised TypeError: JSONDecoder.__init__() got an unexpected keyword argument 'seed'
    """
    return _Generator(path, import_callable(path, "--generator"))


def generate(function: Callable[..., Any], train: Any, schema_of: Table, *, seed: int, n: int) -> Table:
    """``function(train, seed=seed, n=n)``, checked: a table with ``schema_of``'s columns and kinds, and ``n`` rows."""
    returned = function(train.copy(), seed=int(seed), n=int(n))
    name = "--generator's output"
    try:
        table = check_same_schema(schema_of, read_frame(returned, name), name)
    except ValueError as error:
        raise ValueError(f"{error} (your --generator must return fn(train_df, *, seed, n) -> a table of train_df's columns)") from None
    if len(table) != n:
        raise ValueError(f"`--generator` must return n = {n} rows, got {len(table)}")
    return table


def probe_generator(function: Callable[..., Any], train: Table, *, seed: int) -> None:
    """One call on at most :data:`PROBE_ROWS` rows of ``train`` (asking for :data:`PROBE_N` rows), before any real generation."""
    rows = np.random.default_rng(seed).permutation(len(train))[:PROBE_ROWS]
    generate(function, train.frame.iloc[np.sort(rows)].reset_index(drop=True), train, seed=seed, n=PROBE_N)


def make_canaries(train: Table, count: int, rng: np.random.Generator) -> Any:
    """``count`` distinct outliers of ``train``'s schema: each number beyond the training range, each category one the table has.

    A canary's number in column j is ``max_j + (0.5 + U) range_j`` or
    ``min_j - (0.5 + U) range_j`` (a fair coin per cell, U uniform on
    [0, 1)), rounded for an integer column; its category in a categorical
    column is drawn uniformly among the training categories. Every canary is
    far from every training record and from the others, so a generator that
    keeps a canary's trace keeps it where no other record is.
    """
    import pandas as pd  # optional (the parquet extra)

    columns: dict[str, Any] = {}
    for column in train.schema:
        values = train.frame[column.name]
        if column.kind == "numeric":
            x = values.to_numpy(dtype=float)
            low, high = float(np.nanmin(x)), float(np.nanmax(x))
            width = (high - low) or 1.0
            offset = (0.5 + rng.random(count)) * width
            cells = np.where(rng.random(count) < 0.5, high + offset, low - offset)
            columns[column.name] = np.round(cells).astype(values.dtype) if pd.api.types.is_integer_dtype(values) else cells
        else:
            categories = sorted(values.dropna().astype(str).unique())
            columns[column.name] = np.array([categories[i] for i in rng.integers(0, len(categories), size=count)], dtype=object)
    frame = pd.DataFrame(columns)
    return frame.astype(train.frame.dtypes.to_dict())
