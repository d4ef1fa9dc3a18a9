"""The blind baseline of an image pool: a brightness shift in scikit-learn's digits is flagged and named, a random split holds the test's level, mia picks it for images."""

from __future__ import annotations

import types

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("sklearn")

from sklearn.datasets import load_digits  # noqa: E402

from privaudit.audits.blind_image import IMAGE_METHOD, blind_image_baseline  # noqa: E402
from privaudit.audits.mia.training import Pool  # noqa: E402
from privaudit.audits.mia.user import user_blind_baseline  # noqa: E402

SHAPE = (1, 8, 8)


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.data, data.target


def test_members_drawn_from_the_brighter_digits_are_flagged_and_the_brightness_named_in_nine_of_ten_seeds(digits):
    x, y = digits
    brightness = x.mean(axis=1)
    flagged, named = 0, 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        members = rng.random(len(x)) < np.where(brightness > np.median(brightness), 0.75, 0.25)
        result = blind_image_baseline(x, y, members, image_shape=SHAPE, seed=seed)
        flagged += result.flagged
        named += bool(result.separating) and result.separating[0][0] == "mean of channel 0 (members higher)"
    assert flagged >= 9 and named >= 9


def test_a_random_split_is_flagged_at_most_at_the_tests_level(digits):
    """Fresh seeds, 600 digits each: the flags stay within the Binomial quantile at 1 - 1e-4 of the 1% level."""
    x, y = digits
    trials = 30
    rng = np.random.default_rng()
    flags, p_values = 0, []
    for _ in range(trials):
        rows = rng.choice(len(x), 600, replace=False)
        result = blind_image_baseline(x[rows], y[rows], rng.random(600) < 0.5, image_shape=SHAPE, seed=int(rng.integers(2**31)))
        flags += result.flagged
        p_values.append(result.p_value)
        assert result.flagged == (result.p_value <= 0.01)
    assert flags <= stats.binom.isf(1e-4, trials, 0.01)
    assert max(p_values) > 0.5  # a test that can pass


def test_mia_reads_an_image_pool_with_the_embedding_and_a_table_with_trees(digits):
    x, y = digits
    members = np.arange(len(x)) % 2 == 0
    pool = Pool(x[:400].astype(np.float32), y[:400], "digits.npz")
    config = types.SimpleNamespace(image_shape=(1, 8, 8), seed=3, label_col=None)
    as_images = user_blind_baseline(pool, config, members[:400])
    assert as_images.method == IMAGE_METHOD and as_images == blind_image_baseline(x[:400], y[:400], members[:400], image_shape=SHAPE, seed=3)
    as_table = user_blind_baseline(pool, types.SimpleNamespace(image_shape=None, seed=3, label_col=None), members[:400])
    assert as_table.method != IMAGE_METHOD and "x[0]" in as_table.columns


def test_a_shape_that_does_not_hold_the_pixels_is_refused(digits):
    x, y = digits
    with pytest.raises(ValueError, match="`image_shape` \\(--image-shape\\) \\(1, 4, 4\\) must hold as many values as each image's 64 pixels"):
        blind_image_baseline(x[:50], y[:50], np.arange(50) < 25, image_shape=(1, 4, 4))


def test_more_classes_than_the_trees_hold_as_categories_are_split_on_their_codes():
    rng = np.random.default_rng(0)
    images, labels = rng.random((600, 16)), np.arange(600) % 300  # 300 classes: above the 255 categories the trees hold
    result = blind_image_baseline(images, labels, rng.random(600) < 0.5, image_shape=(1, 4, 4), seed=0)
    assert 0.0 <= result.auc <= 1.0 and result.num_in + result.num_out == 600
