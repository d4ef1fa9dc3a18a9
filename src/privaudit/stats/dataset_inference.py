"""Dataset inference: was a suspect set, as a whole, used to train a model? A test whose level holds exactly.

After Maini, Jia, Papernot and Dziedzic (NeurIPS 2024, arXiv:2406.06443). The
data owner holds a *suspect* set, claimed to be in the training data, and a
*validation* set drawn from the same distribution and known never to have been
used. Each record carries several membership features (for a language model:
its loss, Min-K% probabilities, zlib ratio, ...). Each set is split at random
in halves; a linear aggregator of the features is learnt on the first halves
(suspect against validation), and the second halves' aggregated scores are
compared.

The null is the paper's: the suspect set was not used, so suspect and
validation records are exchangeable. The aggregator depends on the first
halves only, so the second halves' scores are then exchangeable too, and the
permutation test of their mean difference (``scipy.stats.permutation_test``,
one-sided, the observed arrangement counted among the resamples) rejects at
level α with probability at most α, whatever the features' distribution. With
few records scipy enumerates every arrangement instead of resampling; then
the smallest p it can give is one over their number (``min_p_value``). That p-value is the decision.
The paper's one-sided Welch t-test of the same scores is reported beside it,
for comparison only: it is exact only for Gaussian scores.

Choices, each fixed before the second halves are seen (any fixed choice keeps
the level; they move power only):

- the clipping (the paper's 5% outliers: each feature clipped to the 2.5% and
  97.5% quantiles), the standardisation and the aggregator are fitted on the
  pooled first halves only. The paper normalises with statistics that include
  the held-out suspect records, which lets them reach the test;
- the aggregator is Fisher's discriminant with a ridge, w = (Σ + λI)⁻¹(μ_S − μ_V)
  on the standardised features (closed form, no training loop), where the
  paper trains a logistic regression; both are linear scores.

>>> rng = np.random.default_rng(0)
>>> validation = rng.normal(size=(400, 3))
>>> suspect = rng.normal(size=(400, 3)) + [0.0, 0.3, 0.0]  # members: higher on the second feature
>>> found = dataset_inference(suspect, validation, seed=0)
>>> found.p_value < 0.01, int(np.argmax(np.abs(found.weights)))
(True, 1)
>>> same = dataset_inference(rng.normal(size=(400, 3)), validation, seed=0)
>>> same.p_value > 0.01
True
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy import stats

from .._core.results import Result
from .._core.seeding import check_seed, child_seeds
from .._core.validation import as_scores, check_count, check_fraction, check_positive, check_probability

__all__ = ["CLIP_FRACTION", "MIN_RECORDS", "RIDGE", "DatasetInference", "dataset_inference", "split_in_halves"]

#: Each set needs this many records: at least 4 in each half.
MIN_RECORDS = 8

#: The share of each feature's values clipped, half at each end (the paper's 5%).
CLIP_FRACTION = 0.05

#: λ of the aggregator's ridge, on standardised features (unit variances).
RIDGE = 0.1


@dataclasses.dataclass(frozen=True)
class DatasetInference(Result):
    """The test of one suspect set against its validation set.

    ``p_value``: the permutation test's, exact under the null (the decision);
    ``welch_p_value``: the paper's t-test on the same scores, for comparison.
    ``mean_difference``: the held-out halves' mean aggregated score, suspect
    less validation (positive: the suspect records look more like members).
    ``weights``: the aggregator's, one per feature, on standardised features
    (0 for a feature constant on the first halves).
    """

    p_value: float
    welch_p_value: float
    mean_difference: float
    weights: tuple[float, ...]
    num_fit: tuple[int, int]  # (suspect, validation) records that fitted the aggregator
    num_test: tuple[int, int]  # (suspect, validation) records whose scores were tested
    num_permutations: int  # the arrangements the p-value counts: every one when ``exact``, else the resamples drawn
    exact: bool  # every arrangement of the held-out scores enumerated (few records), not resampled
    clip_fraction: float
    ridge: float
    seed: int
    method: str = "dataset inference (Maini et al. 2024): ridge Fisher aggregator on half of each set, one-sided permutation test on the other halves"

    @property
    def min_p_value(self) -> float:
        """The smallest p-value this design can give: 1/arrangements when exact, else 1/(resamples + 1)."""
        return 1.0 / (self.num_permutations + (0 if self.exact else 1))

    def rejects(self, alpha: float = 0.05) -> bool:
        """Whether the suspect set is found used in training at level ``alpha`` (the permutation p-value)."""
        return self.p_value <= check_probability(alpha, "alpha")


def split_in_halves(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(fit rows, test rows) of a set of ``size`` records: a seeded random half, then the rest (``size // 2`` fit rows).

    >>> fit, test = split_in_halves(5, seed=0)
    >>> len(fit), len(test), sorted(np.r_[fit, test].tolist())
    (2, 3, [0, 1, 2, 3, 4])
    """
    order = np.random.default_rng(check_seed(seed)).permutation(check_count(size, "size", minimum=2))
    return np.sort(order[: size // 2]), np.sort(order[size // 2 :])


def _check_features(values: Any, name: str) -> np.ndarray:
    features = as_scores(values, name, ndim=2)
    if features.shape[0] < MIN_RECORDS or features.shape[1] < 1:
        raise ValueError(f"`{name}` must be a (records, features) array with at least {MIN_RECORDS} records and 1 feature, got shape {features.shape}")
    return features


def _fit_aggregator(suspect: np.ndarray, validation: np.ndarray, clip_fraction: float, ridge: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, centre, weights on the clipped, centred and scaled features) learnt from the first halves."""
    pooled = np.vstack([suspect, validation])
    if clip_fraction > 0:
        low, high = np.quantile(pooled, [clip_fraction / 2, 1 - clip_fraction / 2], axis=0)
    else:  # no clipping, not clipping to the first halves' range
        low, high = np.full(pooled.shape[1], -np.inf), np.full(pooled.shape[1], np.inf)
    clipped = np.clip(pooled, low, high)
    centre, scale = clipped.mean(axis=0), clipped.std(axis=0)
    varying = scale > 0
    standard = np.zeros_like(clipped)
    standard[:, varying] = (clipped[:, varying] - centre[varying]) / scale[varying]
    member, other = standard[: len(suspect)], standard[len(suspect) :]
    within = np.vstack([member - member.mean(axis=0), other - other.mean(axis=0)])
    covariance = within.T @ within / max(len(within) - 2, 1)
    weights = np.linalg.solve(covariance + ridge * np.eye(covariance.shape[0]), member.mean(axis=0) - other.mean(axis=0))
    weights[~varying] = 0.0
    scaled = np.where(varying, weights / np.where(varying, scale, 1.0), 0.0)  # weights on the clipped raw features
    return low, high, centre, scaled


def _mean_difference(first: np.ndarray, second: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.mean(first, axis=axis) - np.mean(second, axis=axis))


def dataset_inference(
    suspect: Any,
    validation: Any,
    *,
    seed: int = 0,
    num_permutations: int = 9999,
    clip_fraction: float = CLIP_FRACTION,
    ridge: float = RIDGE,
) -> DatasetInference:
    """Test whether the ``suspect`` records were used in training, against ``validation`` records drawn alike and never used.

    ``suspect`` and ``validation`` are (records, features) arrays of the same
    features, each oriented as the user likes (the aggregator learns the
    direction). ``seed`` draws the halves and the permutations. The module
    docstring gives the procedure and why its p-value is exact.
    """
    suspect = _check_features(suspect, "suspect")
    validation = _check_features(validation, "validation")
    if suspect.shape[1] != validation.shape[1]:
        raise ValueError(f"`validation` must have the features of `suspect` ({suspect.shape[1]} columns), got {validation.shape[1]}")
    seed = check_seed(seed)
    check_count(num_permutations, "num_permutations", minimum=99)
    clip_fraction = check_fraction(clip_fraction, "clip_fraction")
    if clip_fraction >= 0.5:
        raise ValueError(f"`clip_fraction` must be in [0, 0.5), got {clip_fraction}")
    ridge = check_positive(ridge, "ridge")
    seeds = child_seeds(seed, ["suspect halves", "validation halves", "permutations"])
    suspect_fit, suspect_test = split_in_halves(len(suspect), seeds["suspect halves"])
    validation_fit, validation_test = split_in_halves(len(validation), seeds["validation halves"])
    low, high, centre, weights = _fit_aggregator(suspect[suspect_fit], validation[validation_fit], clip_fraction, ridge)

    def scores(rows: np.ndarray) -> np.ndarray:
        return np.asarray((np.clip(rows, low, high) - centre) @ weights, dtype=np.float64)

    member, other = scores(suspect[suspect_test]), scores(validation[validation_test])
    permuted = stats.permutation_test(
        (member, other),
        _mean_difference,
        permutation_type="independent",
        vectorized=True,
        n_resamples=num_permutations,
        alternative="greater",
        rng=np.random.default_rng(seeds["permutations"]),
    )
    welch = stats.ttest_ind(member, other, equal_var=False, alternative="greater")
    welch_p = float(welch.pvalue) if np.isfinite(welch.pvalue) else 1.0  # constant scores: nothing to see
    scale = np.std(np.clip(np.vstack([suspect[suspect_fit], validation[validation_fit]]), low, high), axis=0)
    return DatasetInference(
        p_value=float(permuted.pvalue),
        welch_p_value=welch_p,
        mean_difference=float(_mean_difference(member, other)),
        weights=tuple(float(value) for value in weights * scale),
        num_fit=(len(suspect_fit), len(validation_fit)),
        num_test=(len(suspect_test), len(validation_test)),
        num_permutations=int(np.size(permuted.null_distribution)),
        exact=math.comb(member.size + other.size, member.size) <= num_permutations,  # scipy enumerates every arrangement then
        clip_fraction=clip_fraction,
        ridge=ridge,
        seed=seed,
    )
