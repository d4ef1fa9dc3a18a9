"""Distinguishing statistics, fitted on pilot samples of the two datasets, that map each output to one score.

Outputs become feature rows first (:func:`features`): a scalar is one
feature, a vector its coordinates, a synthetic table its one-way marginal
counts over the values seen in the pilot plus the count of rows equal to the
target record (the record the two datasets differ in). Then each statistic
is fitted on pilot features of D ("in") and D' ("out"), higher meaning
"more like D":

* ``linear``: the difference of the means over the pooled variance, per
  coordinate (a diagonal linear discriminant); for scalars, the output itself
  up to sign;
* ``gaussian-ratio``: the log-likelihood ratio of per-coordinate Gaussians
  (a diagonal quadratic discriminant), which sees a change of spread;
* ``histogram``: the smoothed log-ratio of how often each distinct output
  occurred, for outputs that repeat (indices, flags, noisy counts), kept
  only when the ``MAX_BINS`` most frequent outputs hold most of the pilot.

With ``learned=True`` (the default) the learned statistics of
:mod:`.learned` follow: a smoothed density ratio per coordinate
(``density-ratio``) and, for outputs of more than one coordinate, a
classifier's score (``classifier``).

Fitting only on pilot samples keeps every bound on the held-out samples
valid: the statistic is fixed before they are drawn.

>>> rng = np.random.default_rng(0)
>>> fitted = fit_statistics(rng.normal(1, 1, (500, 1)), rng.normal(0, 1, (500, 1)))
>>> [statistic.name for statistic in fitted]
['linear', 'gaussian-ratio', 'density-ratio']
>>> bool(fitted[0].score(np.array([[2.0]]))[0] > fitted[0].score(np.array([[0.0]]))[0])
True
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from .learned import fit_classifier, fit_density_ratio

__all__ = ["MAX_BINS", "Scorer", "Statistic", "TableFeatures", "features", "fit_statistics"]

#: most distinct outputs a histogram statistic keeps (the rest share one bin)
MAX_BINS = 64
_VARIANCE_FLOOR = 1e-12


@dataclasses.dataclass(frozen=True)
class TableFeatures:
    """One-way marginals of synthetic tables over the values seen in the pilot, and the target record's count."""

    values: tuple[tuple[float, ...], ...]  # per column, the values counted
    target: tuple[float, ...] | None

    @classmethod
    def fit(cls, tables: np.ndarray, target: np.ndarray | None) -> TableFeatures:
        columns = tables.reshape(-1, tables.shape[-1])
        values = tuple(tuple(float(v) for v in np.unique(columns[:, j])[:MAX_BINS]) for j in range(columns.shape[1]))
        row = None if target is None or np.size(target) != tables.shape[-1] else tuple(float(v) for v in np.ravel(target))
        return cls(values, row)

    def __call__(self, tables: np.ndarray) -> np.ndarray:
        counts = [(tables[:, :, j, None] == np.asarray(values)).sum(axis=1) for j, values in enumerate(self.values)]
        if self.target is not None:
            counts.append(np.all(tables == np.asarray(self.target), axis=2).sum(axis=1, keepdims=True))
        return np.concatenate(counts, axis=1).astype(np.float64)


def features(samples: np.ndarray, table: TableFeatures | None = None) -> np.ndarray:
    """Samples as a (size, features) float array: scalars and vectors as they are, tables through ``table``."""
    if samples.ndim == 3:
        if table is None:
            raise ValueError("`table` features must be fitted for table outputs")
        return table(samples)
    return samples.reshape(samples.shape[0], -1).astype(np.float64, copy=False)


class Scorer(Protocol):
    """What a test needs of a fitted statistic: its name and ``score(features) -> (size,)``, higher meaning "more like D"."""

    @property
    def name(self) -> str: ...

    def score(self, rows: np.ndarray) -> np.ndarray: ...


@dataclasses.dataclass(frozen=True)
class Statistic:
    """A fitted statistic: ``score(features) -> (size,)`` scores, higher meaning "more like D"."""

    name: str
    parameters: tuple[np.ndarray, ...]

    def score(self, rows: np.ndarray) -> np.ndarray:
        if self.name == "linear":
            (weights,) = self.parameters
            return np.asarray(rows @ weights, dtype=np.float64)
        if self.name == "gaussian-ratio":
            mean_in, var_in, mean_out, var_out = self.parameters
            log_in = -0.5 * (np.log(var_in) + (rows - mean_in) ** 2 / var_in)
            log_out = -0.5 * (np.log(var_out) + (rows - mean_out) ** 2 / var_out)
            return np.asarray((log_in - log_out).sum(axis=1), dtype=np.float64)
        keys, log_ratios = self.parameters  # histogram: outputs not among the keys share the last ratio
        index = _lookup(keys, rows)
        return np.asarray(log_ratios[index], dtype=np.float64)


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One number per row: equal rows get equal keys; distinct rows collide with probability ~0.

    A collision would only merge two bins: the statistic stays a fixed
    function of the output, so bounds stay valid.
    """
    weights = np.random.default_rng(20240607).uniform(1.0, 2.0, rows.shape[1])  # fixed, never the global RNG
    return np.asarray(rows @ weights, dtype=np.float64)


def _lookup(keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Index of each row's key in sorted ``keys``; ``keys.size`` (the shared bin) for rows not among them."""
    found = _row_keys(rows)
    position = np.searchsorted(keys, found).clip(max=max(keys.size - 1, 0))
    return np.where(keys[position] == found, position, keys.size) if keys.size else np.zeros(found.size, dtype=np.int64)


def _histogram(rows_in: np.ndarray, rows_out: np.ndarray) -> Statistic | None:
    pooled = _row_keys(np.concatenate([rows_in, rows_out]))
    distinct, counts = np.unique(pooled, return_counts=True)
    kept = np.sort(distinct[np.argsort(-counts, kind="stable")[:MAX_BINS]])
    if np.isin(pooled, kept).mean() < 0.5:  # continuous outputs: nearly every output is new
        return None
    bins = kept.size + 1
    count_in = np.bincount(_lookup(kept, rows_in), minlength=bins) + 0.5
    count_out = np.bincount(_lookup(kept, rows_out), minlength=bins) + 0.5
    log_ratios = np.log(count_in / count_in.sum()) - np.log(count_out / count_out.sum())
    return Statistic("histogram", (kept, log_ratios))


def fit_statistics(rows_in: np.ndarray, rows_out: np.ndarray, *, learned: bool = True, classifier: bool = True, seed: int = 0) -> list[Scorer]:
    """The statistics fitted on pilot feature rows of D (``rows_in``) and D' (``rows_out``); ``seed`` seeds the classifier.

    ``classifier=False`` leaves the classifier out (the neighbour search's quick tests).
    """
    mean_in, mean_out = rows_in.mean(axis=0), rows_out.mean(axis=0)
    var_in = np.maximum(rows_in.var(axis=0), _VARIANCE_FLOOR)
    var_out = np.maximum(rows_out.var(axis=0), _VARIANCE_FLOOR)
    fitted: list[Scorer] = [
        Statistic("linear", ((mean_in - mean_out) / (0.5 * (var_in + var_out)),)),
        Statistic("gaussian-ratio", (mean_in, var_in, mean_out, var_out)),
    ]
    histogram = _histogram(rows_in, rows_out)
    fitted += [histogram] if histogram is not None else []
    if learned:
        fitted.append(fit_density_ratio(rows_in, rows_out))
        trained = fit_classifier(rows_in, rows_out, seed) if classifier and rows_in.shape[1] > 1 else None
        fitted += [trained] if trained is not None else []
    return fitted
