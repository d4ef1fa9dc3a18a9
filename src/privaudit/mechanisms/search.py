"""Choosing the pair (D, D') on the search's own samples: candidates scored by a pilot test, then a local search.

1. **Candidates.** The neighbours of the given D (:func:`.neighbours.candidates`:
   its extreme records removed or replaced, records at the domain's ends
   added, ``num_random`` random ones), then the neighbours at the domain's
   ends of other datasets D (:func:`.neighbours.dataset_variants`: one
   record, every record a copy of the largest, records at the domain's ends).
2. **Local search.** ``steps`` moves from the best pair so far, each kept
   when it scores higher: the differing record moved by a random step (a
   quarter of the domain's width, kept in the domain), one shared record
   dropped from both datasets, or one duplicated in both.

Each pair gets ``search_samples`` samples per side (one draw per distinct
D) and is scored by the ε of the pilot test (:func:`.tester.bound_samples`
with the first half as pilot and the second as held-out, at confidence ½,
without the classifier, for speed). The largest wins (ties: the first
tried). A pair on which the mechanism fails is skipped and listed with ε 0.
The samples are the search's own, never those that are bounded, so the
bound on the final pair stays valid whatever the search picks. A search is
not resumable: it takes seconds (its budget is stated in the result), and
its seed reproduces it exactly.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .claims import Claim
from .neighbours import Candidate, candidates, dataset_variants
from .sampling import Mechanism, draw
from .tester import bound_samples

__all__ = ["SearchOutcome", "search_pair"]


@dataclasses.dataclass(frozen=True, eq=False)
class SearchOutcome:
    """The chosen pair, every pair's pilot ε in the order tried, and the mechanism samples the search drew."""

    chosen: Candidate
    scores: tuple[tuple[str, float], ...]
    samples_drawn: int


class _Scorer:
    """Scores pairs on fresh search samples, drawing D's samples once per distinct D."""

    def __init__(self, mechanism: Mechanism, given: np.ndarray, shape: tuple[int, ...], claim: Claim, size: int, rng: np.random.Generator, name: str):
        self.mechanism, self.given, self.shape, self.claim, self.size, self.rng, self.name = mechanism, given, shape, claim, size, rng, name
        # keyed by content, not id(): a freed dataset's id can be reused by a new one
        self.cache: dict[tuple[str, tuple[int, ...], bytes], np.ndarray] = {}
        self.drawn = 0

    def _draw(self, dataset: np.ndarray, which: str) -> np.ndarray:
        self.drawn += self.size
        return draw(self.mechanism, dataset, self.size, self.rng, self.shape, self.name, which)

    def __call__(self, candidate: Candidate) -> float:
        dataset = self.given if candidate.dataset is None else candidate.dataset
        key = (dataset.dtype.str, dataset.shape, dataset.tobytes())
        if key not in self.cache:
            self.cache[key] = self._draw(dataset, "dataset")
        samples_d, samples_n = self.cache[key], self._draw(candidate.neighbour, "neighbour")
        half = self.size // 2
        outcome = bound_samples(
            samples_d[:half],
            samples_n[:half],
            samples_d[half:],
            samples_n[half:],
            claim=self.claim,
            confidence=0.5,
            thresholds_per_test=1,
            target=candidate.record,
            classifier=False,
        )
        return outcome.epsilon


def _moves(best: Candidate, given: np.ndarray, low: np.ndarray, high: np.ndarray, rng: np.random.Generator) -> Candidate | None:
    """One random local move from ``best``: move its differing record, drop a shared record, or duplicate one."""
    dataset = (given if best.dataset is None else best.dataset).copy()
    neighbour = best.neighbour.copy()
    holder = dataset if best.holder == "dataset" else neighbour
    index = best.index % holder.shape[0]
    integer = dataset.dtype.kind in "iub"
    move = ("record", "drop", "duplicate")[int(rng.integers(3))]
    if move == "record":
        shape = dataset.shape[1:]
        step = rng.normal(0.0, 0.25 * (high - low))
        new = np.clip(np.ravel(holder[index]) + step, low, high)
        value = np.asarray(np.round(new) if integer else new, dtype=dataset.dtype).reshape(shape)
        holder[index] = value
        return Candidate(
            f"local search: the differing record moved to {tuple(float(v) for v in np.ravel(value))}", neighbour, value, dataset, index, best.holder
        )
    # rows shared by D and D': D's row k is D''s row k, except past a record added to (or removed from) one side
    shared = [k for k in range(dataset.shape[0]) if not (best.holder in ("dataset", "both") and k == index)]
    if not shared or (move == "drop" and min(dataset.shape[0], neighbour.shape[0]) < 2):
        return None
    k = shared[int(rng.integers(len(shared)))]
    k_other = k + (1 if best.holder == "neighbour" and k >= index else 0) - (1 if best.holder == "dataset" and k > index else 0)
    if move == "drop":
        new_index = index - (1 if k < index else 0)
        dataset, neighbour = np.delete(dataset, k, axis=0), np.delete(neighbour, k_other, axis=0)
        return Candidate(f"local search: a shared record dropped (|D| = {dataset.shape[0]})", neighbour, best.record, dataset, new_index, best.holder)
    dataset = np.concatenate([dataset, dataset[k][None]])
    neighbour = np.concatenate([neighbour, neighbour[k_other][None]])
    return Candidate(f"local search: a shared record duplicated (|D| = {dataset.shape[0]})", neighbour, best.record, dataset, index, best.holder)


def search_pair(
    mechanism: Mechanism,
    dataset: np.ndarray,
    relation: str,
    low: np.ndarray,
    high: np.ndarray,
    *,
    shape: tuple[int, ...],
    claim: Claim,
    search_samples: int,
    num_random: int,
    steps: int,
    rng: np.random.Generator,
    name: str,
) -> SearchOutcome:
    """The pair whose search samples separate best, with every pair's pilot ε (:mod:`.search`'s procedure)."""
    found = candidates(dataset, relation, low, high, rng, num_random)
    for how, other in dataset_variants(dataset, low, high):
        found += [dataclasses.replace(c, how=f"{how}; {c.how}", dataset=other) for c in candidates(other, relation, low, high, rng, 0)]
    seen: set[tuple[bytes, bytes]] = set()
    unique = []
    for candidate in found:  # a dataset of copies has one smallest and largest record: one pair, tried once
        key = ((dataset if candidate.dataset is None else candidate.dataset).tobytes(), candidate.neighbour.tobytes())
        if key not in seen:
            seen.add(key)
            unique.append(candidate)
    found = unique
    if not found:
        raise ValueError(f"`{name}`: the dataset has no neighbour to search (one record, and none can be added)")
    score = _Scorer(mechanism, dataset, shape, claim, search_samples, rng, name)
    scores: list[tuple[str, float]] = []
    best, best_score = found[0], -np.inf

    def attempt(candidate: Candidate) -> None:
        nonlocal best, best_score
        try:
            value = score(candidate)
        except ValueError as error:  # the mechanism refuses this pair (too few records, say): skipped, and said so
            scores.append((f"{candidate.how} (skipped: {error})", 0.0))
            return
        scores.append((candidate.how, value))
        if value > best_score:
            best, best_score = candidate, value

    for candidate in found:
        attempt(candidate)
    for _ in range(steps):
        moved = _moves(best, dataset, low, high, rng)
        if moved is not None:
            attempt(moved)
    if not np.isfinite(best_score):
        raise ValueError(f"`{name}` failed on every candidate pair of the search: {scores[0][0]}")
    return SearchOutcome(best, tuple(scores), score.drawn)
