"""Learned statistics, fitted on pilot samples only: density-ratio regions and a classifier's score.

Both map a feature row to an estimate of the log-likelihood ratio
log p(o)/q(o) of D ("in") against D' ("out"), so that the region
{o : score(o) > t} approximates the optimal (Neyman–Pearson) rejection
region. Being fitted on pilot samples only, they are fixed functions of the
output before the held-out samples are drawn: every bound on the held-out
samples stays valid, however good or bad the fit.

* ``density-ratio``: for each output coordinate, the log-ratio of the two
  sides' histograms (one bin per value for discrete coordinates, else
  ``bins`` equal-mass bins of the pooled pilot, open at both ends), smoothed
  by isotonic regression in the direction that fits best (location families
  with log-concave noise, Laplace, Gaussian, their discrete versions, have a
  monotone ratio); the coordinates whose two pilot samples differ (a
  two-sample Kolmogorov–Smirnov test at ``SELECT_LEVEL``, or the single most
  different one) are summed, as a naive-Bayes ratio. For the replace-one
  histogram bug it finds the two bins that moved and the plateaus of their
  Laplace ratio.
* ``classifier``: the decision function of a small gradient-boosted tree
  classifier (scikit-learn's ``HistGradientBoostingClassifier``; DP-Sniper
  and DP-Auditorium train classifiers the same way) for outputs of more than
  one coordinate, where the coordinates interact. Omitted, and so not part of
  the Bonferroni family, when scikit-learn is not installed.

>>> rng = np.random.default_rng(0)
>>> ratio = fit_density_ratio(rng.laplace(1, 1, (1000, 1)), rng.laplace(0, 1, (1000, 1)))
>>> ratio.coordinates
(0,)
>>> bool(ratio.score(np.array([[3.0]]))[0] > ratio.score(np.array([[-3.0]]))[0] + 1.0)
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy import stats
from scipy.optimize import isotonic_regression

__all__ = ["SELECT_LEVEL", "ClassifierScore", "DensityRatio", "fit_classifier", "fit_density_ratio"]

#: the Kolmogorov–Smirnov p-value below which a coordinate enters the density ratio
SELECT_LEVEL = 0.01
#: most distinct values of a coordinate read as discrete (one bin per value)
_MAX_VALUES = 64
#: pooled pilot samples per bin of a continuous coordinate, and the bin count's range
_PER_BIN, _MIN_BINS, _MAX_BINS = 50, 4, 40


@dataclasses.dataclass(frozen=True, eq=False)
class DensityRatio:
    """Per selected coordinate, bin edges (values for discrete coordinates) and each bin's smoothed log-ratio, summed."""

    coordinates: tuple[int, ...]
    edges: tuple[np.ndarray, ...]
    discrete: tuple[bool, ...]
    log_ratios: tuple[np.ndarray, ...]
    name: str = "density-ratio"

    def score(self, rows: np.ndarray) -> np.ndarray:
        total = np.zeros(rows.shape[0], dtype=np.float64)
        for j, edges, discrete, ratios in zip(self.coordinates, self.edges, self.discrete, self.log_ratios, strict=True):
            total += ratios[_bin(rows[:, j], edges, discrete)]
        return total


def _bin(values: np.ndarray, edges: np.ndarray, discrete: bool) -> np.ndarray:
    """The bin of each value: for a discrete coordinate the nearest kept value, else the interval between edges."""
    if discrete:
        position = np.searchsorted(edges, values).clip(1, edges.size - 1) if edges.size > 1 else np.zeros(values.size, dtype=np.int64)
        if edges.size > 1:
            left = edges[position - 1]
            position = np.where(np.abs(values - left) <= np.abs(edges[position] - values), position - 1, position)
        return np.asarray(position, dtype=np.int64)
    return np.asarray(np.searchsorted(edges, values, side="right"), dtype=np.int64)


def _smoothed_log_ratio(count_in: np.ndarray, count_out: np.ndarray) -> np.ndarray:
    """Bins' log-ratios (add-½ smoothing), made monotone by weighted isotonic regression in the better-fitting direction."""
    raw = np.log((count_in + 0.5) / (count_in.sum() + 0.5 * count_in.size)) - np.log((count_out + 0.5) / (count_out.sum() + 0.5 * count_out.size))
    weights = count_in + count_out + 1.0
    fits = [isotonic_regression(raw, weights=weights, increasing=increasing).x for increasing in (True, False)]
    errors = [float(np.sum(weights * (fit - raw) ** 2)) for fit in fits]
    return np.asarray(fits[int(np.argmin(errors))], dtype=np.float64)


def fit_density_ratio(rows_in: np.ndarray, rows_out: np.ndarray) -> DensityRatio:
    """The smoothed per-coordinate log-ratio of pilot rows of D (``rows_in``) and D' (``rows_out``), over the coordinates that differ."""
    d = rows_in.shape[1]
    p_values = np.array([stats.ks_2samp(rows_in[:, j], rows_out[:, j], method="asymp").pvalue if d > 1 else 0.0 for j in range(d)])
    chosen = np.flatnonzero(p_values < SELECT_LEVEL)
    if chosen.size == 0:
        chosen = np.array([int(np.argmin(p_values))])
    coordinates, all_edges, kinds, all_ratios = [], [], [], []
    for j in chosen:
        pooled = np.concatenate([rows_in[:, j], rows_out[:, j]])
        values = np.unique(pooled)
        if values.size <= _MAX_VALUES:
            edges, discrete = values, True
        else:
            bins = int(np.clip(pooled.size // _PER_BIN, _MIN_BINS, _MAX_BINS))
            edges, discrete = np.unique(np.quantile(pooled, np.arange(1, bins) / bins)), False
        size = edges.size if discrete else edges.size + 1
        count_in = np.bincount(_bin(rows_in[:, j], edges, discrete), minlength=size).astype(np.float64)
        count_out = np.bincount(_bin(rows_out[:, j], edges, discrete), minlength=size).astype(np.float64)
        coordinates.append(int(j))
        all_edges.append(edges)
        kinds.append(discrete)
        all_ratios.append(_smoothed_log_ratio(count_in, count_out))
    return DensityRatio(tuple(coordinates), tuple(all_edges), tuple(kinds), tuple(all_ratios))


@dataclasses.dataclass(frozen=True, eq=False)
class ClassifierScore:
    """A fitted classifier of D's rows against D''s; the score is its decision function (log-odds of D)."""

    model: Any
    name: str = "classifier"

    def score(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.decision_function(rows), dtype=np.float64)


def fit_classifier(rows_in: np.ndarray, rows_out: np.ndarray, seed: int) -> ClassifierScore | None:
    """A small gradient-boosted classifier of pilot rows, or None without scikit-learn (the ``sklearn`` extra)."""
    try:
        # scikit-learn is optional (the `sklearn` extra): imported only when a multi-coordinate output needs it
        from sklearn.ensemble import HistGradientBoostingClassifier
    except ImportError:
        return None
    rows = np.concatenate([rows_in, rows_out])
    labels = np.concatenate([np.ones(rows_in.shape[0]), np.zeros(rows_out.shape[0])])
    model = HistGradientBoostingClassifier(max_iter=60, learning_rate=0.1, max_leaf_nodes=8, min_samples_leaf=40, early_stopping=False, random_state=seed)
    model.fit(rows, labels)
    return ClassifierScore(model)
