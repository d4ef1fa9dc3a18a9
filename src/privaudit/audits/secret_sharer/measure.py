"""What both Secret Sharer runs share: the baselines and the headline (the measurement itself: :mod:`privaudit.observation.canary_exposure`).

The run on privaudit's own character LSTM (:mod:`.secret_sharer`) and the
run on the user's Hugging Face model (:mod:`.secret_sharer_own`) differ in
where the model and the canaries come from; from a scorer on, they are the
same: :func:`measure_with` measures the canaries with the config's
extraction settings (:func:`measure_canaries`, re-exported here),
:func:`exposure_fields` turns the measurement into the result fields both
record (the ε bound and the baselines among them) and
:func:`exposure_observations` into the arrays the figures draw, and
:func:`exposure_headline` reads the numbers the same way. What a scorer's log-perplexity spans is the scorer's
to say: the user's model's scorer records it as a convention
(:meth:`privaudit.models.hf.HFCausalLMScorer.scored_span`).
"""

from __future__ import annotations

import numpy as np

from ...observation.canary_exposure import MeasuredCanaries, enumeration_index, measure_canaries
from ...stats.exposure import epsilon_from_exposure, random_guessing_exposure
from ..base import Headline

__all__ = [
    "MeasuredCanaries",
    "enumeration_index",
    "exposure_fields",
    "exposure_headline",
    "exposure_observations",
    "guessing_baselines",
    "guessing_upper",
    "measure_canaries",
    "measure_with",
    "skewnorm_density",
]


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


def measure_with(config, scorer, fmt, records, references, *, max_exact: int, say) -> MeasuredCanaries:
    """:func:`measure_canaries` with a Secret Sharer config's extraction settings (``extract``, ``extraction_batch_size``, ``max_extraction_queries``)."""
    return measure_canaries(
        scorer,
        fmt,
        records,
        references,
        max_exact=max_exact,
        extract=config.extract,
        extraction_batch_size=config.extraction_batch_size,
        max_extraction_queries=config.max_extraction_queries,
        say=say,
    )


def exposure_fields(measured: MeasuredCanaries, fmt, *, num_references: int, num_canaries: int, duplicates: int) -> dict:
    """The result fields both runs record from a measurement: the canaries, |R|, the baselines, the ε bound, extraction and the skew-normal fit.

    The bound is :func:`~privaudit.stats.exposure.epsilon_from_exposure` on
    the log-perplexities, which are losses (lower = more memorised), as it
    expects, by group privacy over ``duplicates``, the largest repetition count.
    """
    bound = epsilon_from_exposure(measured.canary_bits, measured.reference_bits, duplicates=duplicates)
    fit = measured.fit
    return {
        "canaries": measured.canaries,
        "space_size": fmt.space_size,
        "num_references": num_references,
        "baselines": guessing_baselines(fmt.space_size, num_references, num_canaries),
        "epsilon_bound": bound.to_dict(),
        "extraction": measured.extraction,
        "skewnorm_fit": {"shape": fit.shape, "loc": fit.loc, "scale": fit.scale, "ks_statistic": fit.ks_statistic},
    }


def exposure_observations(measured: MeasuredCanaries) -> dict:
    """The arrays the figures draw: the references' and canaries' bits, the skew-normal fit and its density."""
    return {
        "reference_bits": measured.reference_bits,
        "canary_bits": measured.canary_bits,
        "skewnorm_fit": measured.fit,
        "skewnorm_density": skewnorm_density(measured.reference_bits, measured.canary_bits, measured.fit),
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
