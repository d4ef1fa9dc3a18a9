"""Generators with the ``--generator`` contract ``fn(train_df, *, seed, n) -> synthetic_df``, built from numpy alone.

* :func:`gaussian_copula`: a Gaussian copula on rank-normalised columns
  (categories placed on their cumulative frequencies), the embedded
  default's generator and a clean baseline;
* :func:`memorising_copula`: its output with about 5% of rows replaced by
  copies of the most outlying training records, the leak DCR misses;
* :func:`near_copy_copula`: the same with near-copies (noise on every
  numeric column, one category changed).

>>> import pandas as pd
>>> train = pd.DataFrame({"x": np.arange(40.0), "c": ["a", "b"] * 20})
>>> synthetic = gaussian_copula(train, seed=0, n=10)
>>> synthetic.shape, list(synthetic.columns), set(synthetic["c"]) <= {"a", "b"}
((10, 2), ['x', 'c'], True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

__all__ = ["MEMORISED_SHARE", "gaussian_copula", "memorising_copula", "most_outlying", "near_copy_copula"]

MEMORISED_SHARE = 0.05


def gaussian_copula(train_df: Any, *, seed: int, n: int) -> Any:
    """``n`` rows from a Gaussian copula fitted on ``train_df`` (numbers by their empirical quantiles, missing values at their rate)."""
    import pandas as pd  # optional (the parquet extra)

    rng = np.random.default_rng(seed)
    frame = train_df.copy()
    normal_scores, inverses = [], []
    for column in frame.columns:
        values = frame[column]
        missing = values.isna().to_numpy()
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            present = values.to_numpy(dtype=float)[~missing]
            ranks = stats.rankdata(present) if present.size else present
            u = np.full(len(values), 0.5)
            u[~missing] = (ranks - 0.5) / max(present.size, 1)
            integer = pd.api.types.is_integer_dtype(values)
            inverses.append(_numeric_inverse(np.sort(present), missing.mean(), integer))
        else:
            text = values.astype(object).where(~missing, None)
            counts = text.value_counts(dropna=False)
            categories, frequencies = list(counts.index), counts.to_numpy() / len(text)
            upper = np.cumsum(frequencies)
            lower = upper - frequencies
            code = np.array([categories.index(v) for v in text])
            u = rng.uniform(lower[code], upper[code])
            inverses.append(_categorical_inverse(categories, upper))
        normal_scores.append(stats.norm.ppf(np.clip(u, 1e-6, 1 - 1e-6)))
    z = np.column_stack(normal_scores)
    correlation = np.corrcoef(z, rowvar=False) if z.shape[1] > 1 else np.ones((1, 1))
    correlation = np.nan_to_num(correlation) + 1e-6 * np.eye(z.shape[1])
    sample = stats.norm.cdf(rng.multivariate_normal(np.zeros(z.shape[1]), correlation, size=n, method="eigh"))
    return pd.DataFrame({column: inverse(sample[:, j], rng) for j, (column, inverse) in enumerate(zip(frame.columns, inverses, strict=True))})


def _numeric_inverse(sorted_values: np.ndarray, missing_rate: float, integer: bool):
    def inverse(u: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        values = np.quantile(sorted_values, u) if sorted_values.size else np.full(u.shape, np.nan)
        if sorted_values.size > 1:  # a smoothed marginal (Silverman's bandwidth): no training value is copied cell by cell
            values = values + rng.normal(0.0, 1.06 * np.std(sorted_values) * sorted_values.size**-0.2, size=u.shape)
        if integer:
            values = np.round(values)
        if missing_rate > 0:
            values = np.where(rng.random(u.shape) < missing_rate, np.nan, values)
        elif integer:
            return values.astype(np.int64)
        return values

    return inverse


def _categorical_inverse(categories: list[Any], upper: np.ndarray):
    def inverse(u: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.array([categories[i] for i in np.minimum(np.searchsorted(upper, u), len(categories) - 1)], dtype=object)

    return inverse


def most_outlying(train_df: Any, count: int, *, neighbours: int = 5) -> np.ndarray:
    """The rows of the ``count`` records farthest (Euclidean, standardised numbers and one-hot categories) from their ``neighbours``-th nearest record."""
    import pandas as pd  # optional (the parquet extra)

    parts = []
    for column in train_df.columns:
        values = train_df[column]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            x = values.to_numpy(dtype=float)
            parts.append(np.nan_to_num((x - np.nanmean(x)) / (np.nanstd(x) or 1.0))[:, None])
        else:
            parts.append(pd.get_dummies(values.astype(object).fillna("<missing>")).to_numpy(dtype=float))
    x = np.hstack(parts)
    distances = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2))
    kth = np.sort(distances, axis=1)[:, min(neighbours, len(x) - 1)]
    return np.argsort(-kth, kind="stable")[:count]


def memorising_copula(
    train_df: Any, *, seed: int, n: int, near: bool = False, base: Callable[..., Any] | None = None, noise: float = 0.05, change_category: bool = True
) -> Any:
    """:func:`gaussian_copula`'s rows (or ``base``'s, a generator of the contract), :data:`MEMORISED_SHARE` of them replaced by copies of the most outlying training records.

    ``near``: near copies instead, each number moved by Gaussian noise of
    ``noise`` x its column's deviation (whole numbers rounded) and, with
    ``change_category``, one category changed.

    >>> import pandas as pd
    >>> train = pd.DataFrame({"x": np.r_[np.zeros(39), 100.0], "c": ["a", "b"] * 20})
    >>> 100.0 in memorising_copula(train, seed=0, n=20)["x"].tolist()  # the outlier, copied verbatim
    True
    >>> far = memorising_copula(train, seed=0, n=20, near=True, noise=0.2, change_category=False)
    >>> bool(far["x"].between(80.0, 120.0).sum() == 1 and 100.0 not in far["x"].tolist())  # moved by about 0.2 x 15.6
    True
    """
    import pandas as pd  # optional (the parquet extra)

    rng = np.random.default_rng(seed)
    synthetic = (base or gaussian_copula)(train_df, seed=int(rng.integers(2**31)), n=n)
    count = max(1, int(round(MEMORISED_SHARE * n)))
    rows = most_outlying(train_df, min(count, len(train_df)))
    copies = train_df.iloc[np.resize(rows, count)].reset_index(drop=True)
    if near:
        copies = _perturb(copies, train_df, rng, noise=noise, change_category=change_category)
    keep = np.sort(rng.choice(n, size=n - count, replace=False))
    out = pd.concat([synthetic.iloc[keep], copies.astype(synthetic.dtypes.to_dict())], ignore_index=True)
    return out.iloc[rng.permutation(n)].reset_index(drop=True)


def near_copy_copula(train_df: Any, *, seed: int, n: int) -> Any:
    """:func:`memorising_copula` with near-copies: Gaussian noise of 5% of each numeric column's deviation, and one category changed."""
    return memorising_copula(train_df, seed=seed, n=n, near=True)


def _perturb(copies: Any, train_df: Any, rng: np.random.Generator, *, noise: float, change_category: bool) -> Any:
    import pandas as pd  # optional (the parquet extra)

    copies = copies.copy()
    categorical = [c for c in copies.columns if not (pd.api.types.is_numeric_dtype(copies[c]) and not pd.api.types.is_bool_dtype(copies[c]))]
    for column in copies.columns:
        if column not in categorical:
            spread = float(np.nanstd(train_df[column].to_numpy(dtype=float))) or 1.0
            noisy = copies[column].to_numpy(dtype=float) + rng.normal(0.0, noise * spread, size=len(copies))
            copies[column] = np.round(noisy) if pd.api.types.is_integer_dtype(copies[column]) else noisy
    if categorical and change_category:
        for i in range(len(copies)):
            column = categorical[int(rng.integers(len(categorical)))]
            others = [v for v in train_df[column].dropna().unique() if v != copies.at[i, column]]
            if others:
                copies.at[i, column] = others[int(rng.integers(len(others)))]
    return copies
