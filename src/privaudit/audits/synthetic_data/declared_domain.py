"""The settings every marginal-based generator adapter checks the same way: its model, (ε, δ), bins and declared domain.

>>> checked_settings("mst", ("mst", "aim"), 2, 1e-5, 20, {"age": (0, 120)}, {"sex": ["F", "M"]})
(2.0, 1e-05, {'age': (0.0, 120.0)}, {'sex': ('F', 'M')})
>>> checked_settings("mst", ("mst",), 1.0, 1e-5, 20, {"x": (0, 1)}, {"x": ["a"]})
Traceback (most recent call last):
...
ValueError: columns ['x'] are in both `bounds` and `categories`: a column is numeric (bounds) or categorical (categories)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["checked_settings", "is_integer_column", "settle_settings"]


def checked_settings(
    model: str,
    models: Sequence[str],
    epsilon: float,
    delta: float,
    bins: int,
    bounds: Mapping[Any, tuple[float, float]] | None,
    categories: Mapping[Any, Sequence[Any]] | None,
) -> tuple[float, float, dict[str, tuple[float, float]], dict[str, tuple[Any, ...]]]:
    """(ε, δ, bounds, categories) as floats, string-keyed dicts and tuples, or a ValueError naming the argument and its allowed range."""
    if model not in models:
        raise ValueError(f"`model` must be one of {', '.join(models)}, got {model!r}")
    if not (math.isfinite(float(epsilon)) and float(epsilon) > 0):
        raise ValueError(f"`epsilon` must be in (0, inf), got {epsilon:g}")
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"`delta` must be in (0, 1), got {delta:g}")
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
        raise ValueError(f"`bins` must be an integer >= 2, got {bins!r}")
    checked_bounds = {}
    for column, pair in dict(bounds or {}).items():
        low, high = (float(value) for value in pair)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"`bounds` of column {column!r} must be finite (low, high) with low < high, got {pair!r}")
        checked_bounds[str(column)] = (low, high)
    checked_categories = {str(column): tuple(values) for column, values in dict(categories or {}).items()}
    for column, values in checked_categories.items():
        if not values or len(set(values)) != len(values):
            raise ValueError(f"`categories` of column {column!r} must name at least one value, each once")
    if both := sorted(set(checked_bounds) & set(checked_categories)):
        raise ValueError(f"columns {both} are in both `bounds` and `categories`: a column is numeric (bounds) or categorical (categories)")
    return float(epsilon), float(delta), checked_bounds, checked_categories


def settle_settings(generator: Any, models: Sequence[str]) -> None:
    """Check a frozen generator dataclass's ``model``, ``epsilon``, ``delta``, ``bins``, ``bounds`` and ``categories``, and store them normalised."""
    settled = checked_settings(generator.model, models, generator.epsilon, generator.delta, generator.bins, generator.bounds, generator.categories)
    for name, value in zip(("epsilon", "delta", "bounds", "categories"), settled, strict=True):
        object.__setattr__(generator, name, value)


def is_integer_column(values: Any) -> bool:
    """Whether a column holds whole numbers by its dtype: numpy's and pandas' nullable integers alike (booleans are not)."""
    import pandas as pd  # optional (the synthetic extra)

    return bool(pd.api.types.is_integer_dtype(values))
