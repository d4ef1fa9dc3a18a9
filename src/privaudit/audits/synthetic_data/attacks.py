"""Per-record membership scores from the synthetic table alone (higher = member), and DCR's aggregate statistics.

* :func:`dcr_distances`: sdmetrics' distance to closest record, row by row;
* :func:`robust_dcr_scores`: the headline, the same distance on the
  population's robust scales, less a tenth of the distance to the population;
* :func:`dcr_statistics`: DCR's holdout test and baseline, the proxy verdict;
* :func:`domias_scores`: DOMIAS (van Breugel et al. 2023), the log density of
  the synthetic data over that of the population at each record;
* :func:`outlier_scores`: how far each record is from the population, for
  choosing the vulnerable records first (Meeus et al. 2023).

>>> numbers = np.array([[0.0], [0.5]]); codes = np.zeros((2, 0), dtype=np.int64)
>>> dcr_distances((numbers, codes), (np.array([[0.1], [2.0]]), np.zeros((2, 0), dtype=np.int64))).round(3).tolist()
[0.1, 0.4]
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from ..._core.validation import as_real_array
from .types import DCRStatistics

__all__ = [
    "dcr_distances",
    "dcr_statistics",
    "robust_dcr_scores",
    "domias_knn_scores",
    "domias_scores",
    "nearest_distances",
    "log_kde",
    "outlier_scores",
    "random_rows",
]

CHUNK_CELLS = 4_000_000  # pairs x columns held at once


def dcr_distances(rows: tuple[np.ndarray, np.ndarray], data: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Each row's distance to its closest row of ``data``: the mean over columns of sdmetrics' per-column distance.

    Both are ``Encoder.dcr_arrays`` pairs (numbers / range, category codes).
    A number's distance is ``min(|a - b|, 1)`` (0 when both are missing, 1
    when one is); a category's is 0 if equal, else 1.
    """
    numbers, codes = rows
    data_numbers, data_codes = data
    columns = numbers.shape[1] + codes.shape[1]
    if columns == 0 or len(data_numbers) == 0:
        raise ValueError("`data` must have rows and columns to measure distances to")
    chunk = max(1, CHUNK_CELLS // max(1, len(data_numbers) * columns))
    best = np.empty(len(numbers))
    for start in range(0, len(numbers), chunk):
        a, b = numbers[start : start + chunk, None, :], data_numbers[None, :, :]
        with np.errstate(invalid="ignore"):
            gap = np.minimum(np.abs(a - b), 1.0)
        gap = np.where(np.isnan(a) & np.isnan(b), 0.0, np.where(np.isnan(gap), 1.0, gap)).sum(axis=2)
        gap += (codes[start : start + chunk, None, :] != data_codes[None, :, :]).sum(axis=2)
        best[start : start + chunk] = gap.min(axis=1) / columns
    return best


POPULATION_WEIGHT = 0.1  # chosen on pilot seeds only (docs/guide-synthetic-data.md, "How the headline was chosen")


def robust_dcr_scores(
    records: tuple[np.ndarray, np.ndarray],
    synthetic: tuple[np.ndarray, np.ndarray],
    population: tuple[np.ndarray, np.ndarray],
    *,
    closest: np.ndarray | None = None,
) -> np.ndarray:
    """The headline: minus each record's distance to its closest synthetic row, plus :data:`POPULATION_WEIGHT` x its distance to the population.

    All three are ``Encoder.dcr_arrays`` pairs on the population's robust
    scales (``Encoder.robust_scale``: numbers / interquartile range,
    categories as codes), so each distance is :func:`dcr_distances`' Gower
    mean with each number's difference capped at one IQR, not at the
    training range a few outliers stretch. A copied record sits at 0 and a
    near copy close to it, while an ordinary record's closest synthetic row
    differs in many columns by a sizeable share of an IQR. The second term
    weighs how unusual the record is: a record with a population twin is
    no evidence of membership, and a near copy of an outlier (far from
    every population record) outranks a common record that happens to
    have a synthetic row as close. Both distances lie in [0, 1], so the
    weight bounds what the second term can move: a record at 0.1 farther
    from the population than another outranks it only when its synthetic
    row is at most 0.01 farther. Exact matches of a categorical table are
    therefore ordered by their distance to the population. ``closest``:
    the records' distances to the synthetic rows, when already computed.

    >>> records = (np.array([[0.0], [0.0], [5.0]]), np.array([[0], [1], [0]]))
    >>> synthetic = (np.array([[0.0], [0.0]]), np.array([[0], [1]]))
    >>> population = (np.array([[0.0]]), np.array([[0]]))  # the first record has a population twin
    >>> np.argsort(-robust_dcr_scores(records, synthetic, population)).tolist()
    [1, 0, 2]
    >>> robust_dcr_scores(records, synthetic, population).round(3).tolist()  # -0 + 0.1 x 0, -0 + 0.1 x 0.5, -0.5 + 0.1 x 0.5
    [0.0, 0.05, -0.45]
    """
    closest = dcr_distances(records, synthetic) if closest is None else closest
    to_population = dcr_distances(records, population)  # in [0, 1]: a Gower mean of capped terms
    return -closest + POPULATION_WEIGHT * to_population


def random_rows(numbers: np.ndarray, codes: np.ndarray, num_categories: tuple[int, ...], count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Uniformly random rows within the training columns' ranges and categories: DCRBaselineProtection's baseline."""
    low, high = np.nanmin(numbers, axis=0) if numbers.size else np.zeros(0), np.nanmax(numbers, axis=0) if numbers.size else np.zeros(0)
    random_numbers = rng.uniform(np.nan_to_num(low), np.nan_to_num(high), size=(count, numbers.shape[1]))
    random_codes = np.column_stack([rng.integers(0, k, size=count) for k in num_categories]) if num_categories else np.zeros((count, 0), dtype=np.int64)
    return random_numbers, random_codes


def dcr_statistics(
    synthetic: tuple[np.ndarray, np.ndarray],
    train: tuple[np.ndarray, np.ndarray],
    holdout: tuple[np.ndarray, np.ndarray],
    num_categories: tuple[int, ...],
    rng: np.random.Generator,
) -> DCRStatistics:
    """DCR's holdout test and baseline on the synthetic rows, after sdmetrics' definitions (see :class:`DCRStatistics`).

    The training table is subsampled (by ``rng``) to the holdout's size when
    it is larger, so a synthetic row is as likely to be closer to either
    set when the generator did not memorise.
    """
    if len(train[0]) > len(holdout[0]):
        keep = np.sort(rng.choice(len(train[0]), size=len(holdout[0]), replace=False))
        train_sample = (train[0][keep], train[1][keep])
    else:
        train_sample = train
    to_train, to_holdout = dcr_distances(synthetic, train_sample), dcr_distances(synthetic, holdout)
    closer = int(np.sum(to_train < to_holdout))
    share = closer / len(to_train)
    p_value = float(stats.binomtest(closer, len(to_train), 0.5, alternative="greater").pvalue)
    median_synthetic = float(np.median(dcr_distances(synthetic, train)))
    median_random = float(np.median(dcr_distances(random_rows(*train, num_categories, len(synthetic[0]), rng), train)))
    return DCRStatistics(
        median_dcr_synthetic=median_synthetic,
        median_dcr_random=median_random,
        baseline_protection=min(1.0, median_synthetic / median_random) if median_random > 0 else 1.0,
        share_closer_to_training=share,
        overfitting_protection=min(1.0, 2.0 * (1.0 - share)),
        binomial_p_value=p_value,
        passes=p_value >= 0.05,
    )


def log_kde(points: np.ndarray, data: np.ndarray) -> np.ndarray:
    """The log density at ``points`` of a Gaussian product kernel on ``data``, bandwidths by Scott's rule per dimension.

    Dimension j's bandwidth is ``s_j n^(-1/(d+4))`` with ``s_j`` the
    standard deviation of ``data``'s column j (a constant column gets 0.05,
    so a one-hot column that never varies still has a kernel). Summed in log
    space: no underflow far from the data.

    >>> data = np.random.default_rng(0).normal(size=(4000, 1))
    >>> float(np.exp(log_kde(np.zeros((1, 1)), data))[0]).__round__(2)
    0.4
    """
    points, data = as_real_array(points, "points"), as_real_array(data, "data")
    n, d = data.shape
    spread = data.std(axis=0, ddof=1) if n > 1 else np.zeros(d)  # ddof 1: scipy's gaussian_kde's covariance
    width = np.where(spread > 0, spread, 0.05) * n ** (-1.0 / (d + 4))
    out = np.empty(len(points))
    chunk = max(1, CHUNK_CELLS // max(1, n * d))
    constant = -np.log(n) - np.sum(np.log(width)) - 0.5 * d * np.log(2 * np.pi)
    for start in range(0, len(points), chunk):
        z = (points[start : start + chunk, None, :] - data[None, :, :]) / width
        out[start : start + chunk] = special.logsumexp(-0.5 * np.sum(z * z, axis=2), axis=1) + constant
    return out


def nearest_distances(points: np.ndarray, data: np.ndarray, k: int = 1) -> np.ndarray:
    """Each point's Euclidean distance to its ``k``-th nearest row of ``data``."""
    out = np.empty(len(points))
    chunk = max(1, CHUNK_CELLS // max(1, len(data) * data.shape[1]))
    for start in range(0, len(points), chunk):
        gap = points[start : start + chunk, None, :] - data[None, :, :]
        squared = np.sum(gap * gap, axis=2)
        out[start : start + chunk] = np.sqrt(np.partition(squared, k - 1, axis=1)[:, k - 1])
    return out


def domias_knn_scores(records: np.ndarray, synthetic: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """DOMIAS with nearest-neighbour densities: log(r_population(x) / r_synthetic(x)), the density ratio's logarithm up to d and a constant.

    A k-nearest-neighbour density is ``k / (n c_d r_k^d)`` with r_k the
    distance to the k-th nearest row, so ``log p_syn(x) - log p_pop(x) =
    d log(r_pop / r_syn) + const``: the same order as this score, with k = 2
    for the population sample (smoother: it is small and never holds x)
    and k = 1 for the synthetic table (a copy is its own nearest row). The distances are
    Euclidean on the numeric embedding; ``1e-9`` is added to each, so an
    exact copy scores high but finite. Unlike a KDE with a global
    bandwidth, the ratio stays local in many dimensions: a copied outlier
    has no population neighbour and a synthetic one at distance 0.

    >>> reference = np.array([[0.0], [1.0], [2.0]]); synthetic = np.array([[5.0], [1.1]])
    >>> domias_knn_scores(np.array([[5.0], [1.0]]), synthetic, reference).round(2).tolist()
    [22.11, 2.3]
    """
    return np.log(nearest_distances(records, reference, k=2) + 1e-9) - np.log(nearest_distances(records, synthetic) + 1e-9)


def domias_scores(records: np.ndarray, synthetic: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """DOMIAS: log p_synthetic(x) - log p_population(x), each a Gaussian KDE (:func:`log_kde`) on the numeric embedding.

    The population's density is fitted on the attacker's reference sample
    (part of the holdout), never on a record that is scored.
    """
    return log_kde(records, synthetic) - log_kde(records, reference)


def outlier_scores(records: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Minus the log density of each record under the population's KDE: higher = more outlying (Meeus et al.'s selection, by density)."""
    return -log_kde(records, reference)
