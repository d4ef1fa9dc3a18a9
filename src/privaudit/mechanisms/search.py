"""Choosing the neighbour on pilot samples: each candidate of :func:`.neighbours.candidates` scored by a pilot test.

Each candidate D' gets ``search_samples`` samples (D's are drawn once and
shared); the pilot test (:func:`.tester.bound_samples` with its first half as
pilot and its second as held-out) gives its ε, and the candidate with the
largest wins (ties: the first, in the order the candidates are listed).
The samples are the search's own, never those that are bounded.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .claims import Claim
from .neighbours import Candidate
from .sampling import Mechanism, draw
from .tester import bound_samples

__all__ = ["SearchOutcome", "search_neighbour"]


@dataclasses.dataclass(frozen=True, eq=False)
class SearchOutcome:
    """The chosen candidate and every candidate's pilot ε, in the order tried."""

    chosen: Candidate
    scores: tuple[tuple[str, float], ...]


def search_neighbour(
    mechanism: Mechanism,
    dataset: np.ndarray,
    found: list[Candidate],
    *,
    shape: tuple[int, ...],
    claim: Claim,
    search_samples: int,
    rng: np.random.Generator,
    name: str,
) -> SearchOutcome:
    """The candidate whose pilot samples separate best from D's, with every candidate's pilot ε."""
    if not found:
        raise ValueError(f"`{name}`: the dataset has no neighbour to search (one record, and none can be added)")
    half = search_samples // 2
    samples_d = draw(mechanism, dataset, search_samples, rng, shape, name)
    scores: list[tuple[str, float]] = []
    for candidate in found:
        samples_n = draw(mechanism, candidate.neighbour, search_samples, rng, shape, name, "neighbour")
        outcome = bound_samples(
            samples_d[:half], samples_n[:half], samples_d[half:], samples_n[half:], claim=claim, confidence=0.5, thresholds_per_test=1, target=candidate.record
        )
        scores.append((candidate.how, outcome.epsilon))
    best = int(np.argmax([score for _, score in scores]))
    return SearchOutcome(found[best], tuple(scores))
