"""What both Secret Sharer runs share: the baselines and the headline (the measurement itself: :mod:`privaudit.observation.canary_exposure`).

The run on privaudit's own character LSTM (:mod:`.secret_sharer`) and the
run on the user's Hugging Face model (:mod:`.secret_sharer_own`) differ in
where the model and the canaries come from; from a scorer on, they are the
same: :func:`measure_canaries` (re-exported here) measures the canaries,
and :func:`guessing_baselines` and :func:`exposure_headline` read the
numbers the same way. What a scorer's log-perplexity spans is the scorer's
to say: the user's model's scorer records it as a convention
(:meth:`privaudit.models.hf.HFCausalLMScorer.scored_span`).
"""

from __future__ import annotations

import numpy as np

from ...observation.canary_exposure import MeasuredCanaries, enumeration_index, measure_canaries
from ...stats.exposure import random_guessing_exposure
from ..base import Headline

__all__ = ["MeasuredCanaries", "enumeration_index", "exposure_headline", "guessing_baselines", "guessing_upper", "measure_canaries", "skewnorm_density"]


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
