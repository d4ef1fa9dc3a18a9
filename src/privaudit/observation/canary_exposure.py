"""Measuring inserted canaries under a scorer: log-perplexities, exposure three ways, and optional shortest-path extraction.

One loop for every Secret Sharer measurement: privaudit's character LSTM and
the user's Hugging Face model (:mod:`privaudit.audits.secret_sharer`,
:mod:`privaudit.audits.secret_sharer.own_model`) and the Trainer integration
(:mod:`privaudit.integrations.transformers`). A scorer has
``format_log_perplexities(fmt, secrets=None)`` and ``extraction_scorer(fmt)``;
what its log-perplexity spans is the scorer's to say.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..stats.exposure import ExtrapolatedExposure, exact_exposure, exposure, exposure_extrapolated

__all__ = ["MeasuredCanaries", "enumeration_index", "measure_canaries"]


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


def _search(scorer, fmt, extraction_batch_size: int, max_queries: int) -> tuple:
    """(found, queries spent when the budget ran out): one of them is None."""
    from ..extraction import BudgetExhausted, shortest_path_search

    try:
        return shortest_path_search(scorer.extraction_scorer(fmt), [len(s) for s in fmt.slots], batch_size=extraction_batch_size, max_queries=max_queries), None
    except BudgetExhausted as error:  # a result, not a failure: nothing was extracted within the budget
        return None, error.queries


def measure_canaries(
    scorer,
    fmt,
    records,
    references,
    *,
    max_exact: int,
    extract: bool,
    extraction_batch_size: int,
    max_extraction_queries: int,
    say: Callable[..., None] | None = None,
    reuse: str | None = None,
) -> MeasuredCanaries:
    """Score the canaries of ``records`` and the ``references`` under ``scorer``; exposures three ways; optional extraction.

    ``records`` are the provenance's canary dicts (``secret``, ``text``,
    ``repetitions``). Exact exposure ranks each canary by its own entry of
    the enumeration of all of R (one computation path), when |R| <=
    ``max_exact``. ``reuse`` goes to scorers that choose how they share
    prefix states (:meth:`privaudit.models.hf.HFCausalLMScorer.format_log_perplexities`);
    ``say(stage, done, total, detail)`` hears the stages.
    """
    say = say or (lambda *_: None)
    options = {} if reuse is None else {"reuse": reuse}
    canary_secrets = [tuple(record["secret"]) for record in records]
    canary_bits = scorer.format_log_perplexities(fmt, secrets=canary_secrets, **options)
    say("scoring references", None, None, f"{len(references)} candidates")
    reference_bits = scorer.format_log_perplexities(fmt, secrets=references, **options)
    sampled = exposure(canary_bits, reference_bits)
    extrapolated = exposure_extrapolated(canary_bits, reference_bits)
    exact = None
    if fmt.space_size <= max_exact:
        say("scoring all of R", None, None, f"{fmt.space_size} candidates")
        everything = scorer.format_log_perplexities(fmt, **options)
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
    search = None
    if found is not None:
        search = {
            "text": fmt.fill(found.secret),
            "log_perplexity_bits": found.log_perplexity,
            "queries": found.queries,
            "calls": found.calls,
            "nodes_expanded": found.nodes_expanded,
        }
    if exhausted is not None:
        search = {
            "text": None,
            "queries": exhausted,
            "calls": None,
            "nodes_expanded": None,
            "outcome": f"not extracted within {max_extraction_queries} queries",
        }
    return MeasuredCanaries(canaries, canary_bits, reference_bits, extrapolated, search)
