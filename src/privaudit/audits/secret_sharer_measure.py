"""What both Secret Sharer runs share: measuring inserted canaries under a scorer, the baselines and the headline.

The run on privaudit's own character LSTM (:mod:`.secret_sharer`) and the
run on the user's Hugging Face model (:mod:`.secret_sharer_own`) differ in
where the model and the canaries come from; from a scorer on, they are the
same: :func:`measure_canaries` scores the canaries and the references (and
all of R when it is small) by log-perplexity, computes exposure three ways
and optionally runs shortest-path extraction; :func:`guessing_baselines`
and :func:`exposure_headline` read the numbers the same way.

A scorer has ``format_log_perplexities(fmt, secrets=None)`` and
``extraction_scorer(fmt)``. What its log-perplexity spans is the scorer's to
say: the user's model's scorer records it as a convention
(:meth:`privaudit.models.hf.HFCausalLMScorer.scored_span`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..stats.exposure import ExtrapolatedExposure, exact_exposure, exposure, exposure_extrapolated, random_guessing_exposure
from .base import Headline, Progress

__all__ = ["MeasuredCanaries", "enumeration_index", "exposure_headline", "guessing_baselines", "guessing_upper", "measure_canaries", "skewnorm_density"]


@dataclasses.dataclass(frozen=True)
class MeasuredCanaries:
    """One dict per canary, the scores exposure ranked, the skew-normal fit of the references, and the extraction record."""

    canaries: tuple[dict, ...]
    canary_bits: np.ndarray
    reference_bits: np.ndarray
    fit: ExtrapolatedExposure
    extraction: dict | None


def enumeration_index(fmt, secret) -> int:
    """Position of ``secret`` in ``fmt.enumerate()`` (lexicographic, last slot fastest).

    >>> from privaudit.canaries import CanaryFormat
    >>> enumeration_index(CanaryFormat("pin {digits:2}"), (4, 2))
    42
    """
    index = 0
    for symbols, symbol in zip(fmt.slots, secret, strict=True):
        index = index * len(symbols) + int(symbol)
    return index


def guessing_upper(space_size: int, num_canaries: int, alpha: float) -> float:
    """Exact exposure that no unmemorised canary reaches with probability > 1 - alpha, over all canaries.

    Without memorisation a canary's rank in R is uniform on {1, ..., |R|}, so
    P(exposure >= log2 |R| - log2 r) = r/|R|; a union bound over the canaries
    puts r at floor(alpha · |R| / k).

    >>> guessing_upper(1000, 5, 0.05)  # r = 10 of 1000
    6.643856189774725
    """
    r = max(1, int(np.floor(alpha * space_size / num_canaries)))
    return float(np.log2(space_size) - np.log2(r))


def guessing_baselines(space_size: int, num_references: int, num_canaries: int) -> dict:
    """The random-guessing exposures a result is read against: sampled mean, median and 75th percentile; the exact levels.

    >>> baselines = guessing_baselines(1000, 100, 5)
    >>> baselines["max_exposure"], baselines["exact_upper_95_all_canaries"] == guessing_upper(1000, 5, 0.05)
    (9.965784284662087, True)
    """
    baseline = random_guessing_exposure(num_references)
    return {
        "mean": baseline.mean,
        "median": baseline.median,
        "quantile_75": baseline.quantile_75,
        "max_exposure": float(np.log2(space_size)),
        "exact_upper_95_all_canaries": guessing_upper(space_size, num_canaries, 0.05),
    }


def exposure_headline(canaries, baselines: dict) -> Headline:
    """The largest exposure (exact when measured, else sampled), flagged beyond the random-guessing level of all canaries.

    >>> exposure_headline([{"exposure_exact": 9.0, "exposure_sampled": 6.0}], {"exact_upper_95_all_canaries": 6.6}).flag
    True
    """
    exact = [float(canary["exposure_exact"]) for canary in canaries if canary["exposure_exact"] is not None]
    column, values = ("exact", exact) if exact else ("sampled", [float(canary["exposure_sampled"]) for canary in canaries])
    largest = max(values)
    # memorisation: beyond what random guessing reaches with 95% probability over all canaries
    flag = bool(exact) and largest > baselines["exact_upper_95_all_canaries"]
    return Headline(value=largest, label=f"largest canary exposure ({column}, bits)", kind="statistic", confidence=None, valid=True, flag=flag)


def skewnorm_density(reference_bits, canary_bits, fit, points: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """(grid, density): the skew-normal ``fit`` of the references' log-perplexities on a grid from the lowest value to the references' highest.

    What the perplexity histogram draws beside the data, computed by the audit so that plotting holds no statistics.

    >>> from types import SimpleNamespace
    >>> grid, density = skewnorm_density(np.array([1.0, 3.0]), np.array([0.0]), SimpleNamespace(shape=0.0, loc=2.0, scale=1.0))
    >>> float(grid[0]), float(grid[-1]), round(float(density.max()), 3)
    (0.0, 3.0, 0.399)
    """
    from scipy import stats

    grid = np.linspace(min(np.min(reference_bits), np.min(canary_bits)), np.max(reference_bits), points)
    return grid, stats.skewnorm.pdf(grid, fit.shape, fit.loc, fit.scale)


def _search(scorer, fmt, extraction_batch_size: int, max_queries: int) -> tuple:
    """(found, queries spent when the budget ran out): one of them is None."""
    from ..extraction import BudgetExhausted, shortest_path_search

    try:
        return shortest_path_search(scorer.extraction_scorer(fmt), [len(s) for s in fmt.slots], batch_size=extraction_batch_size, max_queries=max_queries), None
    except BudgetExhausted as error:  # a result, not a failure: nothing was extracted within the budget
        return None, error.queries


def measure_canaries(
    scorer, fmt, records, references, *, max_exact: int, extract: bool, extraction_batch_size: int, max_extraction_queries: int, say: Progress
) -> MeasuredCanaries:
    """Score the canaries of ``records`` and the ``references`` under ``scorer``; exposures three ways; optional extraction.

    Exact exposure ranks each canary by its own entry of the enumeration of
    all of R (one computation path), when |R| <= ``max_exact``.
    """
    canary_secrets = [tuple(record["secret"]) for record in records]
    canary_bits = scorer.format_log_perplexities(fmt, secrets=canary_secrets)
    say("scoring references", None, None, f"{len(references)} candidates")
    reference_bits = scorer.format_log_perplexities(fmt, secrets=references)
    sampled = exposure(canary_bits, reference_bits)
    extrapolated = exposure_extrapolated(canary_bits, reference_bits)
    exact = None
    if fmt.space_size <= max_exact:
        say("scoring all of R", None, None, f"{fmt.space_size} candidates")
        everything = scorer.format_log_perplexities(fmt)
        exact = exact_exposure(everything[[enumeration_index(fmt, secret) for secret in canary_secrets]], everything)
    found, exhausted = None, None
    if extract:
        say("extraction", None, None, "shortest-path search")
        found, exhausted = _search(scorer, fmt, extraction_batch_size, max_extraction_queries)
    canaries = tuple(
        {
            "text": record["text"],
            "repetitions": record["repetitions"],
            "log_perplexity_bits": float(canary_bits[index]),
            "rank_sampled": int(sampled.ranks[index]),
            "exposure_sampled": float(sampled.exposures[index]),
            "exposure_extrapolated": float(extrapolated.exposures[index]),
            "rank_exact": int(exact.ranks[index]) if exact is not None else None,
            "exposure_exact": float(exact.exposures[index]) if exact is not None else None,
            "extracted": (None if exhausted is None else False) if found is None else found.secret == canary_secrets[index],
            "extraction_queries": None if found is None else found.queries,
        }
        for index, record in enumerate(records)
    )
    search = None if found is None else {"text": fmt.fill(found.secret), "queries": found.queries, "calls": found.calls, "nodes_expanded": found.nodes_expanded}
    if exhausted is not None:
        search = {
            "text": None,
            "queries": exhausted,
            "calls": None,
            "nodes_expanded": None,
            "outcome": f"not extracted within {max_extraction_queries} queries",
        }
    return MeasuredCanaries(canaries, canary_bits, reference_bits, extrapolated, search)
