"""Canaries against a marginal-based generator, in cells of its own binning, and the marginal attack that scores them.

A marginal-based generator (MST, AIM, PrivBayes) keeps of a record only its
counts in the cells it measures. An outlier beyond the training range is
clipped into the same end bin as the training rows there, and a canary
inside a filled cell is one more count among many: either way the noise
hides it. :func:`cell_canaries` instead places canaries in cells of the
generator's declared domain that the training table leaves empty (after
Golob et al. 2024 and Ganev, Annamalai and Kulynych 2026: records that make
rare or unique cells):

* each canary is a training row drawn at random with one value moved into
  its *home*: a one-way cell, of any column, that the training table leaves
  empty;
* the homes are dealt from every column's empty cells in seeded rounds, so
  no two canaries share a home until every empty cell has one.

A canary with a home of its own moves one cell of a one-way marginal, and
every two-way cell that holds its home, from empty to one; a generator that
measures those marginals (MST and AIM measure every one-way marginal) keeps
that trace unless its noise hides it. Only the home is unusual, so no other
canary's values fall into a canary's cells.

:func:`cell_canary_scores` is the marginal attack
(:mod:`privaudit.audits.synthetic_data.marginals`) restricted to each
canary's *own* cells: cells that no training row and no other canary falls
into. The training share of such a cell is 0, so the attack's log ratio of
shares is, up to a constant, ``log(1 + S / α)`` with S the release's rows in
the cell and α the smoothing. A canary's score sums it over its own one-way
cells (its home) when it has one, else over its own two-way cells: every
marginal-based generator measures the one-way marginals, while a two-way
cell is measured only when its pair is chosen, and elsewhere it holds only
what the model spreads there. The score is 0 where the release leaves those
cells empty. A cell another canary shares would mix in that canary's coin,
so it is left out.

The generator states its binning with two methods, which privaudit's dpmm
adapters have (:class:`~privaudit.audits.synthetic_data.dpmm_generators.DpmmGenerator`):
``marginal_cells(train_df, frame) -> (rows, columns) int array`` (a negative
cell for a value outside the domain) and ``cell_values(train_df) -> {column:
[(cell, value), ...]}``, one value inside each cell of the domain.

>>> import pandas as pd
>>> from privaudit.audits.synthetic_data.dpmm_generators import mst
>>> generator = mst(epsilon=1.0, bins=4, bounds={"age": (0, 100)}, categories={"sex": ["F", "M", "X"]})
>>> train = pd.DataFrame({"age": [10.0, 30.0, 35.0], "sex": ["F", "M", "M"]})
>>> canaries = cell_canaries(generator, train, 2, np.random.default_rng(1))
>>> generator.marginal_cells(train, canaries).tolist()  # homes: sex X (age of a training row), then ages 50-75
[[0, 2], [2, 1]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .marginals import SMOOTHING, pair_keys

__all__ = ["MARGINAL_SIGNAL", "cell_canaries", "cell_canary_scores", "has_binning", "home_count", "shared_homes_warning"]

MARGINAL_SIGNAL = (
    "the marginal attack in the generator's own binning: each canary's sum of log(1 + rows of the release / 0.5) over its own one-way cells, or "
    "its own two-way cells when it has no one-way one (own: no training row and no other canary falls into it; all fixed before the coins)"
)


def has_binning(function: Any) -> bool:
    """Whether ``function`` states its binning (``marginal_cells`` and ``cell_values``), so the cell canaries and the marginal attack apply."""
    return callable(getattr(function, "marginal_cells", None)) and callable(getattr(function, "cell_values", None))


def _empty_cells(function: Any, train_df: Any) -> dict[str, list[tuple[int, Any]]]:
    """Per column, the (cell, value) pairs of ``function``'s binning that no row of ``train_df`` falls into, each value checked to fall in its cell."""
    filled = np.asarray(function.marginal_cells(train_df, train_df))
    values_of = function.cell_values(train_df)
    missing = [str(column) for column in train_df.columns if column not in values_of]
    if filled.shape != (len(train_df), len(train_df.columns)) or missing:
        raise ValueError(
            f"`--generator`'s binning must give one cell per row and column (`marginal_cells`: ({len(train_df)}, {len(train_df.columns)}), got "
            f"{filled.shape}) and cell values for every column (`cell_values`, missing {missing})"
        )
    empty = {}
    for j, column in enumerate(train_df.columns):
        used = set(filled[:, j].tolist())
        pairs = [(cell, value) for cell, value in values_of[column] if cell not in used]
        if pairs:  # a value the binning puts in another cell would give no home of its own
            probe = _with_values(train_df.iloc[[0] * len(pairs)].reset_index(drop=True), column, [value for _, value in pairs])
            back = function.marginal_cells(train_df, probe)[:, j]
            pairs = [pair for pair, cell in zip(pairs, back, strict=True) if cell == pair[0]]
        empty[column] = pairs
    return empty


def _with_values(frame: Any, column: str, values: list[Any]) -> Any:
    """``frame`` (a copy of the caller's rows) with ``values`` in ``column``, a categorical column's categories widened to hold them."""
    import pandas as pd  # optional (the parquet extra)

    if isinstance(frame[column].dtype, pd.CategoricalDtype):
        new = [value for value in dict.fromkeys(values) if value not in frame[column].cat.categories]
        frame[column] = frame[column].cat.add_categories(new)
    frame[column] = pd.Series(values, index=frame.index, dtype=frame[column].dtype)
    return frame


def home_count(function: Any, train_df: Any) -> int:
    """How many one-way cells of ``function``'s binning ``train_df`` leaves empty: the canaries that can have a home of their own."""
    return sum(len(cells) for cells in _empty_cells(function, train_df).values())


def shared_homes_warning(function: Any, train_df: Any, count: int) -> str | None:
    """A warning when ``count`` cell canaries are more than the empty cells, so some share a home; else None."""
    homes = home_count(function, train_df)
    if count <= homes:
        return None
    sharing = min(count, 2 * (count - homes))  # the homes are dealt in rounds: each of the count - homes extra canaries shares with one
    fewer = f"use --canaries {homes} or " if homes >= 10 else ""  # the audit takes 10 canaries at least
    return (
        f"{count} canaries but the generator's domain leaves only {homes} one-way cells empty: {sharing} canaries share a home cell, and a "
        f"canary that shares one is told apart only through rarer two-way cells, so the bound loses power; {fewer}declare a "
        "wider domain (more bins, bounds or categories the training table leaves empty)"
    )


def cell_canaries(function: Any, train_df: Any, count: int, rng: np.random.Generator) -> Any:
    """``count`` canaries of ``train_df``'s columns: training rows drawn by ``rng``, each with one value moved into a home cell ``train_df`` leaves empty.

    Raises a ValueError when ``function`` states no binning or its domain
    has no empty cell at all (a canary there cannot have a cell of its own).
    """
    if not has_binning(function):
        raise ValueError("cell canaries need a generator that states its binning (`marginal_cells` and `cell_values`, as privaudit's dpmm adapters do)")
    empty = _empty_cells(function, train_df)
    homes = [(column, value) for column in train_df.columns for _, value in empty[column]]
    if not homes:
        raise ValueError(
            "the generator's domain has no cell that the training table leaves empty: declare bounds wider than the data (or categories it lacks) for cell canaries"
        )
    rows = rng.choice(len(train_df), size=count, replace=count > len(train_df))
    frame = train_df.iloc[np.sort(rows)].reset_index(drop=True).copy()
    dealt = np.concatenate([rng.permutation(len(homes)) for _ in range(-(-count // len(homes)))])[:count]
    for column in train_df.columns:
        moved = [k for k, home in enumerate(dealt) if homes[home][0] == column]
        if moved:
            values = frame[column].tolist()
            for k in moved:
                values[k] = homes[dealt[k]][1]
            frame = _with_values(frame, column, values)
    return frame


def _cells(function: Any, train_df: Any, frames: tuple[Any, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each column's number of cells, and each frame's cells in ``function``'s binning, a value outside the domain (a negative cell) in an extra last cell."""
    raw = [np.asarray(function.marginal_cells(train_df, frame), dtype=np.int64).reshape(len(frame), len(train_df.columns)) for frame in frames]
    sizes = np.maximum(np.vstack(raw).max(axis=0, initial=0), 0) + 2
    return sizes, [np.where(cells < 0, sizes - 1, cells) for cells in raw]


def cell_canary_scores(function: Any, train_df: Any, canaries: Any, synthetic: Any) -> np.ndarray:
    """Each canary's sum of ``log(1 + S / α)`` over its own one-way cells, or its own two-way cells when it has no one-way one (higher = included).

    ``train_df`` is the training table without the canaries, ``synthetic``
    the release (DataFrames of the same columns); S counts the release's
    rows in a cell, α is :data:`~privaudit.audits.synthetic_data.marginals.SMOOTHING`.

    >>> import pandas as pd
    >>> from privaudit.audits.synthetic_data.dpmm_generators import mst
    >>> generator = mst(epsilon=1.0, bins=4, bounds={"a": (0, 4), "b": (0, 4)})
    >>> train = pd.DataFrame({"a": [0.5, 0.5], "b": [0.5, 1.5]})
    >>> canaries = pd.DataFrame({"a": [3.5, 2.5, 0.5], "b": [3.5, 2.5, 1.5]})  # the third is a training row's twin: no cell of its own
    >>> release = pd.DataFrame({"a": [3.5, 3.5, 0.5], "b": [3.5, 3.5, 1.5]})  # two rows in every cell of the first canary
    >>> cell_canary_scores(generator, train, canaries, release).round(4).tolist()
    [3.2189, 0.0, 0.0]
    >>> round(2 * float(np.log(1 + 2 / 0.5)), 4)  # its own one-way cells a = 3 and b = 3, each holding 2 rows of the release
    3.2189
    """
    sizes, (canary_cells, release_cells, training_cells) = _cells(function, train_df, (canaries, synthetic, train_df))
    columns = canary_cells.shape[1]
    one_way = _own_evidence(training_cells, canary_cells, release_cells, sizes, [(c, c) for c in range(columns)])
    two_way = _own_evidence(training_cells, canary_cells, release_cells, sizes, [(a, b) for a in range(columns) for b in range(a + 1, columns)])
    return np.where(one_way[1] > 0, one_way[0], two_way[0])


def _own_evidence(
    training: np.ndarray, canaries: np.ndarray, release: np.ndarray, sizes: np.ndarray, pairs: list[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Per canary, the sum of log(1 + S / α) over its own cells of the column ``pairs`` ((c, c): one-way), and how many own cells it has."""
    scores, owned = np.zeros(len(canaries)), np.zeros(len(canaries), dtype=np.int64)
    for i, j in pairs:
        at, cells = pair_keys(canaries, i, j, sizes)
        trained, placed, released = (np.bincount(pair_keys(rows, i, j, sizes)[0], minlength=cells) for rows in (training, canaries, release))
        own = (trained[at] == 0) & (placed[at] == 1)
        scores += np.where(own, np.log1p(released[at] / SMOOTHING), 0.0)
        owned += own
    return scores, owned
