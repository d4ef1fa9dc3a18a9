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

__all__ = ["RELATIONS", "Candidate", "candidates", "check_pair", "data_domain"]

RELATIONS = ("add-remove", "replace")


@dataclasses.dataclass(frozen=True, eq=False)
class Candidate:
    """A candidate neighbour: how it was made, the dataset, and the record it differs in."""

    how: str
    neighbour: np.ndarray
    record: np.ndarray


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
            Candidate(f"remove record {i} (the {word} record)", np.delete(dataset, i, axis=0), dataset[i])
            for i, word in ((smallest, "smallest"), (largest, "largest"))
        ]
        found += [Candidate(f"add a record at the domain's {word}", add(record(value)), record(value)) for word, value in (("minimum", low), ("maximum", high))]
        for _ in range(num_random):
            i = int(rng.integers(dataset.shape[0]))
            found.append(Candidate(f"remove record {i} (random search)", np.delete(dataset, i, axis=0), dataset[i]))
            new = random_record()
            found.append(Candidate(f"add the record {_record(new)} (random search)", add(new), new))
    else:
        for i, word, value, end in ((smallest, "smallest", high, "maximum"), (largest, "largest", low, "minimum")):
            changed = dataset.copy()
            changed[i] = record(value)
            found.append(Candidate(f"replace record {i} (the {word}) by the domain's {end}", changed, changed[i]))
        for _ in range(num_random):
            i = int(rng.integers(dataset.shape[0]))
            changed = dataset.copy()
            changed[i] = random_record()
            found.append(Candidate(f"replace record {i} by {_record(changed[i])} (random search)", changed, changed[i]))
    return [candidate for candidate in found if candidate.neighbour.shape[0] > 0]
