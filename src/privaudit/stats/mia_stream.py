"""LiRA and RMIA over chunks of records, so signals on disk are streamed instead of held: the same scores in bounded memory.

The attacks of :mod:`privaudit.stats.mia` treat records independently, except
for two things computed over all of them, which are done first in their own
pass over the chunks:

* LiRA's global variance, the squared deviations pooled over every record
  (a sum of the chunks' sums);
* RMIA's population ratios log Pr(z|θ) − log Pr(z), one per sample z, which
  are sorted once; each chunk of records x is then scored against them.

``reference`` and ``membership`` are (k, n): a 2-D array, a memory-mapped
``.npy``, or a sequence of k rows (one per reference model, e.g. each a
memory-mapped file of :class:`privaudit.runner.RunStore`). Only
``chunk_records`` columns are read at a time, so the working memory is about
:func:`working_bytes` (k × ``chunk_records`` × 8 bytes, times the attack's
temporaries) whatever n is; what grows with the records is the 1-D vectors
(the target's signals, the scores, the indices and the sorted population
ratios: 8 bytes each per record).

The scores equal those of :mod:`privaudit.stats.mia` to rounding: RMIA's
bit for bit (each column is computed alone), LiRA's to about 1e-15 relative
(its sums run in another order, as they do for a transposed array).

>>> from privaudit.stats.mia import lira_online_scores
>>> rng = np.random.default_rng(0)
>>> membership = np.argsort(rng.random((50, 4)), axis=1).T < 2
>>> reference, target = rng.normal(size=(4, 50)) + membership, rng.normal(size=50)
>>> whole = lira_online_scores(target, reference, membership, global_variance=True)
>>> bool(np.allclose(lira_scores_streamed(target, reference, membership, online=True, global_variance=True, chunk_records=7), whole, rtol=1e-12))
True
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.validation import as_scores, check_count, check_fraction, check_positive
from .mia import Floats, _check, _dominated, _lira, _moments, _pooled_std, _rmia_ratio

__all__ = ["DEFAULT_CHUNK_RECORDS", "WORKING_COPIES", "lira_scores_streamed", "rmia_ratios_streamed", "rmia_scores_streamed", "working_bytes"]

#: Records read at a time by default: 4096 records × 64 references × 8 bytes = 2 MiB a block.
DEFAULT_CHUNK_RECORDS = 4096
#: How many (k, chunk) float64 blocks an attack holds at its peak (measured with tracemalloc in tests/test_mia_streaming.py).
WORKING_COPIES = 12

Rows = Sequence[Any] | NDArray[Any]


def working_bytes(num_references: int, chunk_records: int) -> int:
    """The working memory the streamed attacks stay within, in bytes: WORKING_COPIES blocks of (k, chunk) float64.

    >>> working_bytes(64, 4096) / 2**20
    24.0
    """
    return WORKING_COPIES * 8 * int(num_references) * int(chunk_records)


def _rows(rows: Rows, name: str, num_records: int) -> list[NDArray[Any]]:
    """The k rows of a (k, n) matrix as 1-D arrays, without copying a memory-mapped one."""
    views = [np.asarray(row) for row in rows]
    if not views or any(view.shape != (num_records,) for view in views):
        raise ValueError(
            f"`{name}` must be (references, records) with {num_records} records (one per target signal), got rows of shapes {[v.shape for v in views[:3]]}"
        )
    return views


def _columns(indices: ArrayLike | None, num_records: int, name: str) -> NDArray[np.intp]:
    if indices is None:
        return np.arange(num_records)
    columns = np.asarray(indices)
    if columns.ndim != 1 or columns.dtype.kind not in "iu" or (columns.size and (columns.min() < 0 or columns.max() >= num_records)):
        raise ValueError(f"`{name}` must be record indices in [0, {num_records - 1}], got {columns.size} values of dtype {columns.dtype}")
    return columns.astype(np.intp)


def _chunks(columns: NDArray[np.intp], chunk_records: int) -> Iterator[tuple[slice, NDArray[np.intp]]]:
    for start in range(0, columns.size, chunk_records):
        yield slice(start, start + chunk_records), columns[start : start + chunk_records]


def _block(
    target: Floats, reference: list[NDArray[Any]], membership: list[NDArray[Any]], columns: NDArray[np.intp]
) -> tuple[Floats, Floats, NDArray[np.bool_]]:
    """The checked (target, reference, membership) of these columns, read from the rows; errors name the chunk."""
    try:
        return _check(target[columns], np.stack([row[columns] for row in reference]), np.stack([row[columns] for row in membership]))
    except ValueError as error:
        raise ValueError(f"{error} (in the chunk of records {int(columns[0])} to {int(columns[-1])})") from None


def _inputs(target_signals: ArrayLike, reference: Rows, membership: Rows, chunk_records: int) -> tuple[Floats, list[NDArray[Any]], list[NDArray[Any]], int]:
    target = as_scores(target_signals, "target_signals")
    rows, member_rows = _rows(reference, "reference_signals", target.size), _rows(membership, "membership", target.size)
    if len(member_rows) != len(rows):
        raise ValueError(f"`membership` must have one row per reference model ({len(rows)}), got {len(member_rows)}")
    return target, rows, member_rows, check_count(chunk_records, "chunk_records", minimum=1)


def lira_scores_streamed(
    target_signals: ArrayLike,
    reference_signals: Rows,
    membership: Rows,
    *,
    online: bool,
    global_variance: bool = False,
    records: ArrayLike | None = None,
    chunk_records: int = DEFAULT_CHUNK_RECORDS,
) -> Floats:
    """Online or offline LiRA (:func:`privaudit.stats.mia.lira_online_scores`, ``lira_offline_scores``) of ``records``, read in chunks.

    ``target_signals`` (n,) and the (k, n) ``reference_signals`` and
    ``membership`` cover every record; ``records`` (default all) are the
    indices scored, and the only ones the global variance is pooled over.
    """
    target, rows, member_rows, chunk_records = _inputs(target_signals, reference_signals, membership, chunk_records)
    columns = _columns(records, target.size, "records")
    pooled = None
    if global_variance:  # first pass: the squared deviations of every record, pooled
        sides = ("IN", "OUT") if online else ("OUT",)
        sums = {side: [0.0, 0, False] for side in sides}
        for _, chunk in _chunks(columns, chunk_records):
            _, reference, member = _block(target, rows, member_rows, chunk)
            for side in sides:
                _, squares, counts = _moments(reference, member if side == "IN" else ~member, True, side)
                sums[side][0] += float(squares.sum())
                sums[side][1] += int(counts.sum())
                sums[side][2] = sums[side][2] or bool((counts >= 2).any())
        pooled = {side: _pooled_std(float(total), int(count), bool(two), side) for side, (total, count, two) in sums.items()}
    scores = np.empty(columns.size, dtype=np.float64)
    for place, chunk in _chunks(columns, chunk_records):
        scores[place] = _lira(*_block(target, rows, member_rows, chunk), online=online, global_variance=global_variance, pooled=pooled)
    return scores


def rmia_ratios_streamed(
    target_signals: ArrayLike,
    reference_signals: Rows,
    membership: Rows,
    *,
    records: ArrayLike | None = None,
    offline_a: float | None = None,
    chunk_records: int = DEFAULT_CHUNK_RECORDS,
    name: str = "membership",
) -> Floats:
    """RMIA's log ratios r(x) = log Pr(x|θ) − log Pr(x) (:func:`privaudit.stats.mia.rmia_log_ratios`) of ``records``, read in chunks."""
    target, rows, member_rows, chunk_records = _inputs(target_signals, reference_signals, membership, chunk_records)
    columns = _columns(records, target.size, "records")
    if offline_a is not None:
        offline_a = check_fraction(offline_a, "offline_a")
    ratios = np.empty(columns.size, dtype=np.float64)
    for place, chunk in _chunks(columns, chunk_records):
        ratios[place] = _rmia_ratio(*_block(target, rows, member_rows, chunk), offline_a, name)
    return ratios


def rmia_scores_streamed(
    target_signals: ArrayLike,
    reference_signals: Rows,
    membership: Rows,
    *,
    population: ArrayLike,
    records: ArrayLike | None = None,
    gamma: float = 1.0,
    offline_a: float | None = None,
    chunk_records: int = DEFAULT_CHUNK_RECORDS,
) -> Floats:
    """RMIA (:func:`privaudit.stats.mia.rmia_scores`) of ``records`` against the samples z at indices ``population``, read in chunks.

    The population's ratios are computed chunk by chunk and sorted once
    (8 bytes per sample); then each chunk of records is scored against them.
    """
    z_columns = _columns(population, np.shape(target_signals)[0] if np.ndim(target_signals) else 0, "population")
    if z_columns.size == 0:
        raise ValueError("`population` must hold at least one record index (a population sample z)")
    log_gamma = float(np.log(check_positive(gamma, "gamma")))
    ratios = functools.partial(rmia_ratios_streamed, target_signals, reference_signals, membership, offline_a=offline_a, chunk_records=chunk_records)
    ratio_z = np.sort(ratios(records=z_columns, name="population_membership"))
    return _dominated(ratios(records=records), ratio_z, log_gamma)
