"""The neighbouring dataset D': checked when the user gives it, searched on pilot samples when not.

Records are the rows of the dataset (the entries of a 1-D dataset). Two
neighbouring relations:

* ``"add-remove"``: D' has one record more or one fewer than D;
* ``"replace"``: D' has the same size and one record changed.

A given pair is checked to be neighbours, and the relation it shows is
recorded. A search tries, in this order:

* the records at the extremes of the data removed (add-remove) or
  replaced by the opposite extreme of the domain (replace);
* a record at the domain's minimum and at its maximum added (add-remove);
* ``num_random`` random records removed, added or swapped in (random search);

and keeps the candidate whose pilot samples give the largest ε
(:func:`privaudit.mechanisms.tester.bound_samples` on a pilot split in two),
i.e. the record that shifts the output most. The search only ever sees
its own samples, drawn apart from those that are bounded, so the bound stays
valid whatever it picks.

>>> check_pair(np.array([1.0, 2.0]), np.array([1.0, 2.0, 9.0]), "--neighbour")
('add-remove', (9.0,), 'given: D plus the record (9.0,)')
>>> check_pair(np.array([1.0, 2.0]), np.array([1.0, 5.0]), "--neighbour")[0]
'replace'
>>> check_pair(np.array([1.0, 2.0]), np.array([3.0, 5.0]), "--neighbour")
Traceback (most recent call last):
...
ValueError: `--neighbour` must differ from `--dataset` in one record (one added, removed or replaced), got 2 records changed
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

__all__ = ["RELATIONS", "Candidate", "candidates", "check_pair", "data_domain", "dataset_variants", "widened_domain"]

RELATIONS = ("add-remove", "replace")


@dataclasses.dataclass(frozen=True, eq=False)
class Candidate:
    """A candidate pair: how it was made, D' (``neighbour``), the record it differs in, and D (None: the given one).

    ``index`` is the row of the differing record in ``holder``: "neighbour"
    (a record added to D), "dataset" (a record of D removed) or "both" (a
    record replaced, the same row in each).
    """

    how: str
    neighbour: np.ndarray
    record: np.ndarray
    dataset: np.ndarray | None = None
    index: int = -1
    holder: str = "neighbour"


def _rows(dataset: np.ndarray) -> np.ndarray:
    return dataset.reshape(dataset.shape[0], -1)


def _record(row: np.ndarray) -> tuple[float, ...]:
    return tuple(float(value) for value in np.ravel(row))


def _sorted_rows(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort(rows.T[::-1])] if rows.shape[1] else rows


def check_pair(dataset: np.ndarray, neighbour: np.ndarray, name: str) -> tuple[str, tuple[float, ...], str]:
    """(relation, differing record, description) of a given pair; a ValueError naming ``name`` when they are not neighbours.

    One record added or removed is checked on the records as a multiset (any
    order); one record replaced, position by position.
    """
    if dataset.shape[1:] != neighbour.shape[1:]:
        raise ValueError(f"`{name}` must have records of the shape of `--dataset`'s, {dataset.shape[1:]}, got {neighbour.shape[1:]}")
    rows, other = _rows(dataset), _rows(neighbour)
    if abs(rows.shape[0] - other.shape[0]) == 1:
        larger, smaller = (other, rows) if other.shape[0] > rows.shape[0] else (rows, other)
        large, small = _sorted_rows(larger), _sorted_rows(smaller)
        differs = np.flatnonzero(np.any(large[: small.shape[0]] != small, axis=1))
        index = int(differs[0]) if differs.size else small.shape[0]
        if np.array_equal(large[index + 1 :], small[index:]):
            record = _record(large[index])
            word = "plus" if larger is other else "minus"
            return "add-remove", record, f"given: D {word} the record {record}"
        raise ValueError(f"`{name}` must differ from `--dataset` in one record (one added, removed or replaced), got more than one record changed")
    if rows.shape[0] == other.shape[0]:
        changed = np.flatnonzero(np.any(rows != other, axis=1))
        if changed.size == 1:
            index = int(changed[0])
            return "replace", _record(other[index]), f"given: record {index} {_record(rows[index])} replaced by {_record(other[index])}"
        raise ValueError(f"`{name}` must differ from `--dataset` in one record (one added, removed or replaced), got {changed.size} records changed")
    raise ValueError(f"`{name}` must have one record more or fewer than `--dataset` ({rows.shape[0]}), or as many, got {other.shape[0]}")


def data_domain(dataset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest value of each field of the records in ``dataset``."""
    rows = _rows(dataset)
    return rows.min(axis=0), rows.max(axis=0)


def widened_domain(dataset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The data's range widened by its own width on each side, per field (a width of 0 counts as max(|value|, 1)).

    Records outside the data's range are what a forgotten clip lets through:
    the default domain reaches them.

    >>> [values.tolist() for values in widened_domain(np.array([0.0, 0.5, 1.0]))]
    [[-1.0], [2.0]]
    >>> [values.tolist() for values in widened_domain(np.ones(4))]
    [[0.0], [2.0]]
    """
    low, high = data_domain(dataset)
    width = np.where(high > low, high - low, np.maximum(np.abs(low), 1.0))
    return low - width, high + width


def _with_rows(dataset: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.asarray(rows, dtype=dataset.dtype).reshape((rows.shape[0], *dataset.shape[1:]))


def dataset_variants(dataset: np.ndarray, low: np.ndarray, high: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Other datasets D to search from: one record, every record duplicated at the largest, and the domain's two ends.

    >>> [(how, data.tolist()) for how, data in dataset_variants(np.array([1.0, 3.0, 2.0]), np.array([0.0]), np.array([4.0]))]
    [('D of one record (the largest)', [3.0]), ('D of 3 copies of the largest record', [3.0, 3.0, 3.0]), ("D of the domain's ends", [0.0, 4.0, 0.0])]
    """
    rows = _rows(dataset)
    largest = rows[int(np.argmax(rows.sum(axis=1)))]
    n = rows.shape[0]
    integer = dataset.dtype.kind in "iub"
    ends = np.where((np.arange(n) % 2 == 0)[:, None], low, high)
    found = [("D of one record (the largest)", _with_rows(dataset, largest[None]))]
    if n > 1:
        found.append((f"D of {n} copies of the largest record", _with_rows(dataset, np.repeat(largest[None], n, axis=0))))
        found.append(("D of the domain's ends", _with_rows(dataset, np.round(ends) if integer else ends)))
    return found


def candidates(dataset: np.ndarray, relation: str, low: np.ndarray, high: np.ndarray, rng: np.random.Generator, num_random: int) -> list[Candidate]:
    """The candidate neighbours of ``dataset`` under ``relation``, in the domain [``low``, ``high``] of a record."""
    rows = _rows(dataset)
    shape = dataset.shape[1:]
    integer = dataset.dtype.kind in "iub"
    order = np.argsort(rows.sum(axis=1), kind="stable")
    smallest, largest = int(order[0]), int(order[-1])

    def record(values: np.ndarray) -> np.ndarray:
        return np.asarray(np.round(values) if integer else values, dtype=dataset.dtype).reshape(shape)

    def random_record() -> np.ndarray:
        return record(rng.uniform(low, high))

    found: list[Candidate] = []
    if relation == "add-remove":
        add: Callable[[np.ndarray], np.ndarray] = lambda new: np.concatenate([dataset, new[None]])
        found += [
            Candidate(f"remove record {i} (the {word} record)", np.delete(dataset, i, axis=0), dataset[i], index=i, holder="dataset")
            for i, word in ((smallest, "smallest"), (largest, "largest"))
        ]
        found += [Candidate(f"add a record at the domain's {word}", add(record(value)), record(value)) for word, value in (("minimum", low), ("maximum", high))]
        for _ in range(num_random):
            i = int(rng.integers(dataset.shape[0]))
            found.append(Candidate(f"remove record {i} (random search)", np.delete(dataset, i, axis=0), dataset[i], index=i, holder="dataset"))
            new = random_record()
            found.append(Candidate(f"add the record {_record(new)} (random search)", add(new), new))
    else:
        for i, word, value, end in ((smallest, "smallest", high, "maximum"), (largest, "largest", low, "minimum")):
            changed = dataset.copy()
            changed[i] = record(value)
            found.append(Candidate(f"replace record {i} (the {word}) by the domain's {end}", changed, changed[i], index=i, holder="both"))
        for _ in range(num_random):
            i = int(rng.integers(dataset.shape[0]))
            changed = dataset.copy()
            changed[i] = random_record()
            found.append(Candidate(f"replace record {i} by {_record(changed[i])} (random search)", changed, changed[i], index=i, holder="both"))
    return [candidate for candidate in found if candidate.neighbour.shape[0] > 0]
