"""A marginal attack for marginal-based generators (MST, AIM, PrivBayes; after Golob et al. 2024).

Those generators release a table whose low-order marginals match noisy
marginals of the training table, so what a record leaves behind is in the
cells of the two-way marginals it falls into. :func:`marginal_scores` scores
each record by how much more often the synthetic table fills its cells than
the attacker's population sample does: the sum over column pairs of
log((synthetic count + α) / (population count + α)), each side a smoothed
frequency. It is DOMIAS' density ratio with the density taken as the
generator models it, one pair of columns at a time.

Numbers are cut into :data:`BINS` bins at the population sample's quantiles
(missing values get a bin of their own), categories are their own cells: no
scored record sets a bin.

>>> import numpy as np
>>> cells = np.array([[0, 0], [1, 1], [0, 1]])
>>> synthetic = np.array([[0, 0]] * 8 + [[1, 1]] * 2)
>>> population = np.array([[0, 0], [1, 1]] * 5)
>>> scores = marginal_scores(cells, synthetic, population, sizes=(2, 2))
>>> scores.round(3).tolist()  # (0, 0) over-represented in the synthetic table, (1, 1) under, (0, 1) in neither
[0.435, -0.788, 0.0]
>>> float(np.log((8 + 0.5) / (10 + 0.5 * 4)) - np.log((5 + 0.5) / (10 + 0.5 * 4))).__round__(3)  # the first, by hand
0.435
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["BINS", "SMOOTHING", "cells_of", "marginal_scores", "pair_keys"]

BINS = 10  # quantile bins of a numeric column
SMOOTHING = 0.5  # the pseudo-count α of every cell (Jeffreys' prior)


def cells_of(encoder: Any, table: Any, population: Any) -> tuple[np.ndarray, tuple[int, ...]]:
    """Each row's cell in every column, and each column's number of cells: numbers by ``population``'s quantile bins, categories by code.

    A number's bins are cut at the deciles of ``population`` (repeated cut
    points merged); a missing number is the last cell; a category none of
    the fitted tables had (code -1) shares the last cell of its column.
    """
    columns, sizes = [], []
    for column in encoder.numeric:
        reference = population.frame[column].to_numpy(dtype=float)
        present = reference[~np.isnan(reference)]
        cuts = np.unique(np.quantile(present, np.linspace(0.0, 1.0, BINS + 1)[1:-1])) if present.size else np.zeros(0)
        values = table.frame[column].to_numpy(dtype=float)
        cell = np.searchsorted(cuts, values, side="right")
        cell[np.isnan(values)] = len(cuts) + 1
        columns.append(cell)
        sizes.append(len(cuts) + 2)
    for column, categories in zip(encoder.categorical, encoder.categories, strict=True):
        code = encoder.codes(table, column)
        columns.append(np.where(code < 0, len(categories), code))
        sizes.append(len(categories) + 1)
    return (np.column_stack(columns) if columns else np.zeros((len(table), 0), dtype=np.int64)), tuple(sizes)


def marginal_scores(records: np.ndarray, synthetic: np.ndarray, population: np.ndarray, *, sizes: tuple[int, ...]) -> np.ndarray:
    """Each record's sum over column pairs of the log ratio of its two-way cell's smoothed frequency, synthetic over population.

    ``records``, ``synthetic`` and ``population`` hold cells (:func:`cells_of`),
    one column per table column, ``sizes`` the cells of each; with one column
    the one-way marginal is used. Higher = member.
    """
    records, synthetic, population = (np.asarray(a, dtype=np.int64) for a in (records, synthetic, population))
    columns = records.shape[1]
    pairs = [(i, j) for i in range(columns) for j in range(i + 1, columns)] or [(i, i) for i in range(columns)]
    scores = np.zeros(len(records))
    for i, j in pairs:
        key, cells = pair_keys(records, i, j, sizes)

        def frequency(rows: np.ndarray, i: int = i, j: int = j, key: np.ndarray = key, cells: int = cells) -> np.ndarray:
            counts = np.bincount(pair_keys(rows, i, j, sizes)[0], minlength=cells)
            return (counts[key] + SMOOTHING) / (len(rows) + SMOOTHING * cells)

        scores += np.log(frequency(synthetic)) - np.log(frequency(population))
    return scores


def pair_keys(rows: np.ndarray, i: int, j: int, sizes: Sequence[int] | np.ndarray) -> tuple[np.ndarray, int]:
    """Each row's index in the two-way marginal of columns ``i`` and ``j`` (the one-way one when i == j), and that marginal's number of cells.

    >>> pair_keys(np.array([[0, 2], [1, 0]]), 0, 1, (2, 3))
    (array([2, 3]), 6)
    """
    if i == j:
        return rows[:, i], int(sizes[i])
    return rows[:, i] * int(sizes[j]) + rows[:, j], int(sizes[i]) * int(sizes[j])
