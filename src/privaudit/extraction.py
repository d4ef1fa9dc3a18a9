"""Extracting secrets from a model by search over the prefix tree (Secret Sharer §8).

The search works on any scorer with the signature

    scorer(prefixes: list[tuple[int, ...]], slot: int) -> array of shape (len(prefixes), k_slot)

giving natural-log probabilities of each symbol of slot ``slot`` after each
prefix (all prefixes in one call have length ``slot``). A *query* is one
prefix scored, the unit a model pays for in a forward pass; a *call* is one
batched scorer invocation.

* :func:`shortest_path_search`: Dijkstra on edge weights -log2 Pr(t | prefix),
  popping ``batch_size`` nodes per call. Batching breaks the guarantee that the
  first leaf is the best, so, as the paper does, the search runs as many
  iterations again after finding the first leaf and returns the best leaf seen.
* :func:`greedy_search`, :func:`beam_search`, :func:`brute_force_search`: the
  baselines. Brute force scores all of R, one query per candidate.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from ._core.results import Result

__all__ = ["BudgetExhausted", "ExtractionResult", "beam_search", "brute_force_search", "greedy_search", "shortest_path_search"]

Scorer = Callable[[list, int], np.ndarray]
_LOG2 = np.log(2.0)


@dataclasses.dataclass(frozen=True)
class ExtractionResult(Result):
    """The best full sequence found, its log-perplexity in bits, and what the search cost."""

    secret: tuple
    log_perplexity: float
    queries: int
    calls: int
    nodes_expanded: int
    method: str


def _check_sizes(slot_sizes: Sequence[int]) -> list[int]:
    sizes = [int(size) for size in slot_sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"`slot_sizes` must be a non-empty list of positive sizes, got {list(slot_sizes)!r}")
    return sizes


class _CountingScorer:
    def __init__(self, scorer: Scorer, sizes: list[int]):
        self.scorer, self.sizes, self.queries, self.calls = scorer, sizes, 0, 0

    def __call__(self, prefixes: list[tuple], slot: int) -> np.ndarray:
        self.queries += len(prefixes)
        self.calls += 1
        bits = -np.asarray(self.scorer(prefixes, slot), dtype=np.float64) / _LOG2
        if bits.shape != (len(prefixes), self.sizes[slot]):
            raise ValueError(f"scorer returned shape {bits.shape} for slot {slot}, expected {(len(prefixes), self.sizes[slot])}")
        return bits


class BudgetExhausted(ValueError):
    """A search that spent its query budget before completing any sequence: nothing was extracted within it."""

    def __init__(self, message: str, queries: int):
        super().__init__(message)
        self.queries = queries


def shortest_path_search(scorer: Scorer, slot_sizes: Sequence[int], *, batch_size: int = 64, max_queries: int | None = None):
    """Batched Dijkstra over the prefix tree with the paper's correction for batching.

    >>> secret = (3, 1, 4)
    >>> def scorer(prefixes, slot):  # 90% on the planted symbol when the prefix matches it
    ...     out = np.full((len(prefixes), 10), np.log(0.1 / 9))
    ...     for row, prefix in enumerate(prefixes):
    ...         out[row, secret[slot]] = np.log(0.9) if prefix == secret[:slot] else np.log(0.1 / 9)
    ...     return out
    >>> result = shortest_path_search(scorer, [10, 10, 10], batch_size=4)
    >>> result.secret, result.queries < 1000
    ((3, 1, 4), True)
    """
    sizes = _check_sizes(slot_sizes)
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be >= 1, got {batch_size}")
    counting = _CountingScorer(scorer, sizes)
    depth = len(sizes)
    tie = itertools.count()
    queue = [(0.0, next(tie), ())]
    best_leaf, first_leaf_iteration, iteration, expanded = None, None, 0, 0
    while queue:
        iteration += 1
        if first_leaf_iteration is not None and iteration > 2 * first_leaf_iteration:
            break
        if max_queries is not None and counting.queries >= max_queries:
            break
        batch: list = []
        while queue and len(batch) < batch_size:
            weight, _, prefix = heapq.heappop(queue)
            if len(prefix) == depth:
                if best_leaf is None or weight < best_leaf[0]:
                    best_leaf = (weight, prefix)
                if first_leaf_iteration is None:
                    first_leaf_iteration = iteration
                continue
            batch.append((weight, prefix))
        by_slot = defaultdict(list)
        for weight, prefix in batch:
            by_slot[len(prefix)].append((weight, prefix))
        for slot, nodes in by_slot.items():
            bits = counting([prefix for _, prefix in nodes], slot)
            expanded += len(nodes)
            for (weight, prefix), row in zip(nodes, bits, strict=True):
                for symbol, cost in enumerate(row):
                    heapq.heappush(queue, (weight + float(cost), next(tie), prefix + (symbol,)))  # type: ignore[misc]
    if best_leaf is None:
        raise BudgetExhausted(
            f"the search stopped after {counting.queries} queries before reaching a full-length sequence; raise `max_queries`", counting.queries
        )
    return ExtractionResult(
        secret=best_leaf[1],
        log_perplexity=best_leaf[0],
        queries=counting.queries,
        calls=counting.calls,
        nodes_expanded=expanded,
        method="shortest-path",
    )


def beam_search(scorer: Scorer, slot_sizes: Sequence[int], *, width: int = 8) -> ExtractionResult:
    """Keep the ``width`` lowest-perplexity prefixes at each slot; width 1 is greedy search."""
    sizes = _check_sizes(slot_sizes)
    if width < 1:
        raise ValueError(f"`width` must be >= 1, got {width}")
    counting = _CountingScorer(scorer, sizes)
    beam = [(0.0, ())]
    for slot, size in enumerate(sizes):
        bits = counting([prefix for _, prefix in beam], slot)
        totals = np.array([weight for weight, _ in beam])[:, None] + bits
        order = np.argsort(totals, axis=None, kind="stable")[:width]
        beam = [(float(totals.flat[flat]), beam[flat // size][1] + (int(flat % size),)) for flat in order]
    weight, secret = beam[0]
    method = "greedy" if width == 1 else f"beam-{width}"
    return ExtractionResult(
        secret=secret, log_perplexity=weight, queries=counting.queries, calls=counting.calls, nodes_expanded=counting.queries, method=method
    )


def greedy_search(scorer: Scorer, slot_sizes: Sequence[int]) -> ExtractionResult:
    """Take the most likely symbol at every slot."""
    return beam_search(scorer, slot_sizes, width=1)


def brute_force_search(scorer: Scorer, slot_sizes: Sequence[int], *, max_space: int = 10**7) -> ExtractionResult:
    """Score every candidate of R and return the lowest log-perplexity.

    Without prefix reuse a model pays one query per candidate, so ``queries``
    is |R|; the scoring itself walks the tree level by level.
    """
    sizes = _check_sizes(slot_sizes)
    space = int(np.prod(sizes, dtype=object))
    if space > max_space:
        raise ValueError(f"the randomness space is too large to enumerate: |R| = {space} > {max_space}")
    counting = _CountingScorer(scorer, sizes)
    prefixes, weights = [()], np.zeros(1)
    for slot, size in enumerate(sizes):
        bits = counting(prefixes, slot)
        weights = (weights[:, None] + bits).ravel()
        prefixes = [prefix + (symbol,) for prefix in prefixes for symbol in range(size)]  # type: ignore[misc]
    best = int(np.argmin(weights))
    return ExtractionResult(
        secret=prefixes[best], log_perplexity=float(weights[best]), queries=space, calls=counting.calls, nodes_expanded=space, method="brute-force"
    )
