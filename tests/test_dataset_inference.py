"""Dataset inference's statistical core: its level holds exactly under the null, its p-value is the exact permutation p, and it finds a used set."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from privaudit._core.seeding import child_seeds
from privaudit.stats.dataset_inference import dataset_inference, split_in_halves

TRIALS = 600


def _null_features(rng: np.random.Generator, size: int) -> np.ndarray:
    """Heavy-tailed, correlated, skewed features: Student t with 2 degrees of freedom, mixed, and one log-normal."""
    base = rng.standard_t(2, size=(size, 3))
    return np.column_stack([base[:, 0], base[:, 0] + 0.5 * base[:, 1], np.exp(base[:, 2] / 3)])


@pytest.mark.parametrize("sizes", [(40, 40), (25, 61)])
def test_the_level_holds_under_the_null_over_many_trials(sizes):
    """Suspect and validation drawn alike: P(p <= alpha) <= alpha, within the binomial allowance at 1e-3, at three levels."""
    rng = np.random.default_rng(20261202)
    p_values = np.array(
        [
            dataset_inference(_null_features(rng, sizes[0]), _null_features(rng, sizes[1]), seed=int(rng.integers(2**31)), num_permutations=199).p_value
            for _ in range(TRIALS)
        ]
    )
    for alpha in (0.05, 0.1, 0.25):
        allowed = stats.binom.isf(1e-3, TRIALS, alpha)
        assert np.sum(p_values <= alpha) <= allowed, (alpha, np.sum(p_values <= alpha), allowed)
    # and it is not a test that never rejects: under the null it rejects near its level
    assert np.sum(p_values <= 0.25) >= stats.binom.ppf(1e-3, TRIALS, 0.25)


def test_the_p_value_is_the_exact_permutation_p_of_the_held_out_halves():
    """One feature, no clipping: the p-value equals brute force over every arrangement of the held-out scores."""
    rng = np.random.default_rng(3)
    suspect, validation = rng.normal(0.4, 1, size=(9, 1)), rng.normal(size=(8, 1))
    result = dataset_inference(suspect, validation, seed=11, clip_fraction=0.0, num_permutations=10_000)
    seeds = child_seeds(11, ["suspect halves", "validation halves", "permutations"])
    suspect_fit, suspect_test = split_in_halves(9, seeds["suspect halves"])
    validation_fit, validation_test = split_in_halves(8, seeds["validation halves"])
    direction = np.sign(suspect[suspect_fit, 0].mean() - validation[validation_fit, 0].mean())
    held = direction * np.r_[suspect[suspect_test, 0], validation[validation_test, 0]]
    count = len(suspect_test)
    observed = held[:count].mean() - held[count:].mean()
    differences = []
    for chosen in itertools.combinations(range(len(held)), count):
        mask = np.zeros(len(held), bool)
        mask[list(chosen)] = True
        differences.append(held[mask].mean() - held[~mask].mean())
    expected = np.mean(np.array(differences) >= observed - 1e-12)
    assert result.p_value == pytest.approx(expected, abs=1e-12)
    assert result.exact and result.num_permutations == len(differences) == 126 and result.min_p_value == pytest.approx(1 / 126)  # C(9, 4)
    assert result.mean_difference == pytest.approx(abs(result.weights[0]) / np.std(np.r_[suspect[suspect_fit, 0], validation[validation_fit, 0]]) * observed)


def test_a_used_set_is_found_whichever_way_its_features_point():
    rng = np.random.default_rng(8)
    validation = _null_features(rng, 300)
    suspect = _null_features(rng, 300)
    suspect[:, 1] -= 0.5  # members have a lower loss
    found = dataset_inference(suspect, validation, seed=0)
    assert found.rejects(0.01) and found.mean_difference > 0 and found.weights[1] < 0
    assert found.welch_p_value < 0.01
    assert found.num_fit == (150, 150) and found.num_test == (150, 150)
    assert not found.exact and found.num_permutations == 9999 and found.min_p_value == 1e-4


def test_bad_input_is_refused_with_the_argument_named():
    rng = np.random.default_rng(0)
    good = rng.normal(size=(10, 2))
    with pytest.raises(ValueError, match="`validation` must have the features of `suspect`"):
        dataset_inference(good, rng.normal(size=(10, 3)))
    with pytest.raises(ValueError, match="`suspect` must be a .* at least 8 records"):
        dataset_inference(good[:5], good)
    with pytest.raises(ValueError, match="`validation` must contain only finite"):
        dataset_inference(good, np.r_[good[:9], [[np.nan, 0.0]]])
    with pytest.raises(ValueError, match="`clip_fraction` must be in \\[0, 0.5\\)"):
        dataset_inference(good, good, clip_fraction=0.5)
    with pytest.raises(ValueError, match="`num_permutations`"):
        dataset_inference(good, good, num_permutations=10)


def test_constant_features_give_p_1_and_weight_0():
    result = dataset_inference(np.ones((10, 2)), np.ones((12, 2)), seed=0)
    assert result.p_value == 1.0 and result.welch_p_value == 1.0 and result.weights == (0.0, 0.0)
