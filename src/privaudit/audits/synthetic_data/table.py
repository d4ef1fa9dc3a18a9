"""The user's tables: read, their schema checked across train, holdout and synthetic, and encoded once.

A column's kind is read from the training table: numbers (pandas'
numeric dtypes) are numeric, anything else (strings, booleans, pandas
categories) categorical. The holdout and the synthetic table must have the
same columns, each of the same kind; otherwise the audit refuses, before
any generation. Missing values are allowed everywhere: a missing
categorical value is a category of its own, a missing number is
imputed by the training mean in the numeric embedding (with a
missing-indicator column) and is at distance 1 from any number in DCR.

>>> import pandas as pd
>>> train = pd.DataFrame({"id": ["a", "b", "c"], "age": [30, None, 50], "city": ["x", "y", None]})
>>> table = read_frame(train, "--train", id_col="id")
>>> [(column.name, column.kind) for column in table.schema], table.ids.tolist()
([('age', 'numeric'), ('city', 'categorical')], ['a', 'b', 'c'])
"""

from __future__ import annotations

import dataclasses
import unicodedata
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..._core.conventions import Convention, checked, default, explicit
from ..._core.files import not_a_file
from ..._core.messages import describe_value, printable
from .types import ColumnSchema

__all__ = ["MISSING", "Encoder", "Table", "check_same_schema", "read_frame", "read_table", "schema_conventions"]

MISSING = "<missing>"  # the category a missing categorical value becomes
SUFFIXES = (".csv", ".parquet")
MAX_TABLE_BYTES = 256 * 2**20
MAX_COLUMNS = 1000
# a value this common pins the quartiles (a zero-inflated count): the robust DCR's scale then looks past it (Encoder.robust_scale)
POINT_MASS = 0.25


@dataclasses.dataclass(frozen=True, eq=False)
class Table:
    """A table without its id column (columns in the training table's order), its ids as strings, and its schema."""

    frame: Any  # pandas.DataFrame
    ids: np.ndarray
    schema: tuple[ColumnSchema, ...]

    def __len__(self) -> int:
        return len(self.frame)


def read_table(path: Any, name: str, *, id_col: str | None = None) -> Table:
    """The ``.csv`` or ``.parquet`` table at ``path``; a ValueError naming the option ``name`` when it cannot be read."""
    import pandas as pd  # optional (the parquet extra): only this family reads tables

    path = Path(path)
    if not str(path).lower().endswith(SUFFIXES):
        raise ValueError(f"`{name}` must be a .csv or .parquet file, got {str(path)!r}")
    if not path.is_file():
        raise ValueError(f"`{name}` {printable(repr(str(path)))} {not_a_file(path)}")
    if path.stat().st_size > MAX_TABLE_BYTES:
        raise ValueError(f"`{name}` {printable(repr(str(path)))} is larger than {MAX_TABLE_BYTES} bytes")
    try:
        if str(path).lower().endswith(".parquet"):
            frame = pd.read_parquet(path)
        else:  # an id column read as text, as written: never via float ("45.0", 2^53 + 1 == 2^53)
            frame = pd.read_csv(path, dtype=None if id_col is None else {unicodedata.normalize("NFC", id_col): str}, keep_default_na=True)
    except Exception as error:  # pandas raises many types for a malformed file
        raise ValueError(f"`{name}` {printable(repr(str(path)))} cannot be read as a table: {describe_value(str(error))}") from None
    if len(frame) == 0:  # said of this file, before another table's schema is compared with its columns of no kind
        raise ValueError(f"`{name}` {printable(repr(str(path)))} has a header but no records")
    return read_frame(frame, name, id_col=id_col)


def _check_cells(frame: Any, name: str) -> None:
    """Refuse a column holding lists, dicts or arrays (a nested parquet), or an infinity: a record's cell is one finite number or one category."""
    for column in frame.columns:
        if _kind(frame[column]) == "numeric":
            infinite = np.isinf(frame[column].to_numpy(dtype=np.float64, na_value=np.nan))
            if infinite.any():
                row = int(np.flatnonzero(infinite)[0])
                raise ValueError(
                    f"`{name}` column {printable(repr(column))} holds an infinity in data row {row + 1}: a number must be finite "
                    "(leave the cell empty for a missing value)"
                )
        if frame[column].dtype == object:
            nested = frame[column].map(lambda value: isinstance(value, (list, tuple, dict, set, np.ndarray))).to_numpy()
            if nested.any():
                row = int(np.flatnonzero(nested)[0])
                raise ValueError(
                    f"`{name}` column {printable(repr(column))} holds nested values ({type(frame[column].iloc[row]).__name__} in row {row + 1}); "
                    "each cell must be one number or one category"
                )


def read_frame(frame: Any, name: str, *, id_col: str | None = None) -> Table:
    """The :class:`Table` of a DataFrame (copied: the caller's frame is never changed)."""
    import pandas as pd  # optional (the parquet extra)

    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`{name}` must be a table (a pandas DataFrame), got {type(frame).__name__}")
    frame = frame.copy()
    if any(not isinstance(column, str) for column in frame.columns):
        raise ValueError(f"`{name}` must have unique string column names, got {describe_value(list(frame.columns))}")
    frame.columns = [unicodedata.normalize("NFC", column) for column in frame.columns]  # 'café' typed or decomposed is one column
    if len(set(frame.columns)) != len(frame.columns):
        raise ValueError(f"`{name}` must have unique string column names, got {describe_value(list(frame.columns))}")
    if frame.shape[1] > MAX_COLUMNS:
        raise ValueError(f"`{name}` has {frame.shape[1]} columns; the audit takes at most {MAX_COLUMNS} (its marginal attack scores every pair of columns)")
    if id_col is not None:
        id_col = unicodedata.normalize("NFC", id_col)
        if id_col not in frame.columns:
            raise ValueError(f"`--id-col` {printable(repr(id_col))} is not a column of `{name}` (columns: {printable(', '.join(frame.columns))})")
        column = frame.pop(id_col)
        if column.isna().any():
            row = int(np.flatnonzero(column.isna().to_numpy())[0])
            raise ValueError(f"`--id-col` {printable(repr(id_col))} of `{name}` has an empty cell in data row {row + 1}: every record needs its id")
        ids = np.array([value if isinstance(value, str) else str(value) for value in column], dtype=object).astype(str)
    else:
        ids = np.array([str(i) for i in range(len(frame))])
    if frame.shape[1] == 0:
        raise ValueError(f"`{name}` has no columns besides its id")
    _check_cells(frame, name)
    schema = tuple(
        ColumnSchema(
            column,
            _kind(frame[column]),
            int(frame[column].nunique(dropna=True)) if _kind(frame[column]) == "categorical" else 0,
            int(frame[column].isna().sum()),
        )
        for column in frame.columns
    )
    return Table(frame, ids, schema)


def _kind(series: Any) -> str:
    import pandas as pd  # optional (the parquet extra)

    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    return "numeric" if numeric else "categorical"


def check_same_schema(reference: Table, other: Table, name: str, *, reference_name: str = "--train") -> Table:
    """``other`` with its columns in ``reference``'s order; a ValueError naming ``name`` when its columns or their kinds differ."""
    if len(other) == 0:
        raise ValueError(f"`{name}` is empty: it must hold records of the same population as `{reference_name}`")
    expected = [column.name for column in reference.schema]
    got = list(other.frame.columns)
    if set(got) != set(expected):
        missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
        raise ValueError(
            f"`{name}` must have the columns of `{reference_name}`: "
            + "; ".join(part for part in (f"missing {missing}" if missing else "", f"extra {extra}" if extra else "") if part)
        )
    kinds = {column.name: column.kind for column in other.schema}
    wrong = [f"{column.name} ({kinds[column.name]}, not {column.kind})" for column in reference.schema if kinds[column.name] != column.kind]
    if wrong:
        raise ValueError(f"`{name}` has columns of another kind than in `{reference_name}`: {', '.join(wrong)}")
    frame = other.frame[expected]
    return Table(frame, other.ids, tuple(next(c for c in other.schema if c.name == column) for column in expected))


@dataclasses.dataclass(frozen=True, eq=False)
class Encoder:
    """The encodings fitted once on the training table (categories from all tables), used by every attack.

    * ``dcr_arrays``: numbers divided by the training column's range
      (missing: NaN) and categories as codes: sdmetrics' DCR per column;
    * ``embedding``: numbers standardised by the training mean and standard
      deviation (missing: the mean, plus an indicator column), categories
      one-hot: the space DOMIAS' densities live in.
    """

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    span: np.ndarray
    categories: tuple[tuple[str, ...], ...]
    with_missing: tuple[str, ...]

    @classmethod
    def fit(cls, train: Table, *others: Table) -> Encoder:
        numeric = tuple(column.name for column in train.schema if column.kind == "numeric")
        categorical = tuple(column.name for column in train.schema if column.kind == "categorical")
        values = train.frame[list(numeric)].to_numpy(dtype=float) if numeric else np.zeros((len(train), 0))
        mean = np.nan_to_num(np.nanmean(values, axis=0)) if len(values) else np.zeros(len(numeric))
        scale = np.nan_to_num(np.nanstd(values, axis=0))
        span = np.nan_to_num(np.nanmax(values, axis=0) - np.nanmin(values, axis=0)) if len(values) else np.zeros(len(numeric))
        tables = (train, *others)
        categories = tuple(tuple(sorted({_category(v) for table in tables for v in table.frame[column]})) for column in categorical)
        with_missing = tuple(column for column in numeric if any(table.frame[column].isna().any() for table in tables))
        return cls(numeric, categorical, mean, np.where(scale > 0, scale, 1.0), np.where(span > 0, span, 1.0), categories, with_missing)

    def dcr_arrays(self, table: Table, scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(numbers / ``scale`` with NaN for missing, category codes): the two halves of sdmetrics' per-column distance.

        ``scale`` is one positive number per numeric column; None: the training range (sdmetrics' DCR).
        """
        divisor = self.span if scale is None else scale
        numbers = table.frame[list(self.numeric)].to_numpy(dtype=float) / divisor if self.numeric else np.zeros((len(table), 0))
        codes = np.column_stack([self.codes(table, column) for column in self.categorical]) if self.categorical else np.zeros((len(table), 0), dtype=np.int64)
        return numbers, codes

    def robust_scale(self, population: Table) -> np.ndarray:
        """Each numeric column's interquartile range in ``population`` (missing values left out): the robust DCR's unit.

        Where one value holds at least :data:`POINT_MASS` of a column (a
        zero-inflated count), the quartiles sit on or near it and the IQR
        shrinks to a sliver of the values' spread; the column then gets the
        larger of its IQR and the IQR of its other values, so small noise
        on a near copy does not count as a large share of a unit. A column
        whose scale is still 0 gets its range in ``population``, and one
        that is constant there gets 1, so every scale is positive. Unlike
        the training range, a few outliers do not stretch it: an ordinary
        difference still counts.

        >>> import pandas as pd
        >>> frame = read_frame(pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0, 100.0], "k": [5.0, 5.0, 5.0, 5.0, 7.0]}), "t")
        >>> Encoder.fit(frame).robust_scale(frame).tolist()
        [2.0, 2.0]
        >>> zeros = read_frame(pd.DataFrame({"affairs": [0.0] * 9 + [0.5, 2.0, 4.0, 6.0, 9.0, 12.0]}), "t")  # IQR 3; the non-zero values' 5.75
        >>> Encoder.fit(zeros).robust_scale(zeros).tolist()
        [5.75]
        """
        if not self.numeric:
            return np.zeros(0)
        values = population.frame[list(self.numeric)].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column: NaN, replaced below
            quartiles = np.nanpercentile(values, [25.0, 75.0], axis=0)
            spread = np.nanmax(values, axis=0) - np.nanmin(values, axis=0)
        iqr = np.nan_to_num(quartiles[1] - quartiles[0])
        iqr = np.maximum(iqr, [_iqr_beside_point_mass(column[~np.isnan(column)]) for column in values.T])
        spread = np.nan_to_num(spread)
        return np.where(iqr > 0, iqr, np.where(spread > 0, spread, 1.0))

    def codes(self, table: Table, column: str) -> np.ndarray:
        """The category codes of ``column``; -1 for a category none of the fitted tables had (a shadow generator's invention)."""
        index = {category: code for code, category in enumerate(self.categories[self.categorical.index(column)])}
        return np.array([index.get(_category(v), -1) for v in table.frame[column]], dtype=np.int64)

    def embedding(self, table: Table) -> np.ndarray:
        """The numeric embedding of ``table``: standardised numbers, missing indicators, one-hot categories."""
        parts = []
        if self.numeric:
            numbers = (table.frame[list(self.numeric)].to_numpy(dtype=float) - self.mean) / self.scale
            parts.append(np.nan_to_num(numbers, nan=0.0))
        for column in self.with_missing:
            parts.append(table.frame[column].isna().to_numpy(dtype=float)[:, None])
        for column, categories in zip(self.categorical, self.categories, strict=True):
            parts.append(np.vstack([np.eye(len(categories)), np.zeros(len(categories))])[self.codes(table, column)])  # -1: all zeros
        return np.hstack(parts) if parts else np.zeros((len(table), 0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, for the shadow jobs of the runner."""
        return {key: value.tolist() if isinstance(value, np.ndarray) else value for key, value in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Encoder:
        return cls(
            numeric=tuple(data["numeric"]),
            categorical=tuple(data["categorical"]),
            mean=np.asarray(data["mean"], dtype=float),
            scale=np.asarray(data["scale"], dtype=float),
            span=np.asarray(data["span"], dtype=float),
            categories=tuple(tuple(c) for c in data["categories"]),
            with_missing=tuple(data["with_missing"]),
        )


def _iqr_beside_point_mass(values: np.ndarray) -> float:
    """The IQR of a column's values other than its most common one, where that one holds >= POINT_MASS of them (else 0: no point mass)."""
    if values.size == 0:
        return 0.0
    distinct, counts = np.unique(values, return_counts=True)
    if counts.max() < POINT_MASS * values.size:
        return 0.0
    others = values[values != distinct[np.argmax(counts)]]
    if others.size < 4:  # too few to have quartiles of their own
        return 0.0
    low, high = np.percentile(others, [25.0, 75.0])
    return float(high - low)


def _category(value: Any) -> str:
    """A categorical cell as text, a missing one as :data:`MISSING`."""
    import pandas as pd  # optional (the parquet extra)

    return MISSING if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def schema_conventions(train: Table, encoder: Encoder, *, id_col: str | None, reference_fraction: float, source: str) -> tuple[Convention, ...]:
    """What the numbers rest on: the schema's kinds, the encodings, the record ids and the holdout's role."""
    kinds = ", ".join(f"{column.name}: {column.kind}" for column in train.schema)
    missing = sum(column.missing_in_train for column in train.schema)
    conventions = [
        checked("schema", kinds, f"the same columns and kinds in --train, --holdout and {source}; {missing} missing values in --train"),
        default(
            "categorical encoding",
            f"one-hot over the categories of all tables; a missing value is the category {MISSING!r}",
            "a category is never ordered or merged with another",
        ),
        default(
            "numeric encoding",
            "robust DCR (the headline): |a - b| / the population sample's interquartile range (where one value holds >= 25% of a column, the larger "
            "of it and the other values' IQR; its range where that is 0, else 1), capped at 1; "
            "DCR: |a - b| / the training column's range, capped at 1 (missing vs a number: 1 in both); DOMIAS: standardised by the training mean and deviation",
            "a few outliers stretch a range but not an IQR; sdmetrics' DCR per column; the embedding only sets DOMIAS' kernel scale",
        ),
        default(
            "holdout's role",
            f"a seeded {reference_fraction:.0%} of --holdout is the attacker's population sample (DOMIAS' reference density, the shadow "
            "generators' data); the rest are the non-members the attacks are evaluated on",
            "no record is both the attacker's knowledge and a record it is evaluated on; DCR's holdout test uses all of --holdout, as sdmetrics does",
        ),
    ]
    if id_col is None:
        conventions.append(default("record id", "row index in each table (from 0)", "no --id-col given"))
    else:
        conventions.append(explicit("record id", f"column {id_col!r} (not a feature, never given to the generator)", "--id-col"))
    return tuple(conventions)
