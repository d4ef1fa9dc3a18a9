"""Generators: MST reproduces its measured marginals, seeds reproduce samples, and schema errors are caught."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.generators import Generator, check_generated
from privaudit.generators.images import VAEGenerator
from privaudit.generators.tabular import MSTGenerator
from privaudit.generators.text import CharLMGenerator


def _chain_data(rng, n=3000):
    """x0 -> x1 -> y: a chain, so the maximum spanning tree holds the true structure."""
    x0 = rng.integers(0, 4, n)
    x1 = np.where(rng.random(n) < 0.8, x0, rng.integers(0, 4, n))
    y = (np.where(rng.random(n) < 0.85, x1 >= 2, rng.random(n) < 0.5)).astype(int)
    return np.column_stack([x0, x1]).astype(float), y


@pytest.fixture(scope="module")
def fitted_mst():
    x, y = _chain_data(np.random.default_rng(7))
    return x, y, MSTGenerator().fit(x, y, seed=0)


def test_mst_samples_match_the_data_marginals(fitted_mst):
    x, y, generator = fitted_mst
    n = 20_000
    fake_x, fake_y = generator.sample(n, seed=3)
    assert isinstance(generator, Generator)
    # oracle: the empirical one- and two-way frequencies of the training data (a tree fits them exactly)
    pairs = [(x[:, 0], x[:, 1], fake_x[:, 0], fake_x[:, 1]), (x[:, 1], y, fake_x[:, 1], fake_y)]
    for real_a, real_b, fake_a, fake_b in pairs:
        for a in np.unique(real_a):
            for b in np.unique(real_b):
                p_real = np.mean((real_a == a) & (real_b == b))
                p_fake = np.mean((fake_a == a) & (fake_b == b))
                # sampling error of both frequencies, 6 standard errors: fails with negligible probability
                tolerance = 6 * np.sqrt(p_real * (1 - p_real) * (1 / n + 1 / len(x))) + 0.005
                assert abs(p_fake - p_real) < tolerance


def test_mst_is_reproducible_from_a_seed(fitted_mst):
    _, _, generator = fitted_mst
    first, again, other = generator.sample(500, seed=1), generator.sample(500, seed=1), generator.sample(500, seed=2)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], other[0])


def test_mst_bins_continuous_columns_without_copying_values():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 1))
    generator = MSTGenerator(max_bins=8).fit(x, (x[:, 0] > 0).astype(int), seed=0)
    fake_x, _ = generator.sample(2000, seed=1)
    assert fake_x.min() >= x.min() and fake_x.max() <= x.max()
    assert np.isin(fake_x[:, 0], x[:, 0]).mean() < 0.01  # uniform inside bins, not resampled real values


def test_vae_is_seeded_and_in_range():
    rng = np.random.default_rng(0)
    x = (rng.random((100, 16)) < 0.3).astype(float)
    first = VAEGenerator(epochs=3, hidden=16, latent=2).fit(x, seed=4)
    second = VAEGenerator(epochs=3, hidden=16, latent=2).fit(x, seed=4)
    a, labels = first.sample(50, seed=1)
    b, _ = second.sample(50, seed=1)
    np.testing.assert_array_equal(a, b)
    assert labels is None and a.shape == (50, 16) and 0.0 <= a.min() and a.max() <= 1.0


def test_text_generator_top1_is_greedy_for_any_seed():
    lines = ["the cat sat on the mat"] * 60
    generator = CharLMGenerator(length=15, top_k=1, hidden=32, epochs=3, sequence_length=20).fit(lines, seed=0)
    one, _ = generator.sample(3, seed=1)
    two, _ = generator.sample(3, seed=99)
    assert one == two and len(set(one)) == 1  # top-1 leaves no randomness
    assert all(len(text) == 15 and "\n" not in text for text in one)


@pytest.mark.parametrize(
    "x, y, match",
    [
        (np.zeros((4, 3)), None, "4 rows of 2 features"),
        (np.full((4, 2), np.nan), None, "finite"),
        (np.zeros((4, 2)), np.array([0, 1, 2, 1]), "labels in 0..1"),
        (np.zeros((3, 2)), None, "4 rows"),
    ],
)
def test_wrong_schema_is_a_clear_error(x, y, match):
    with pytest.raises(ValueError, match=match):
        check_generated(x, y, num_features=2, num_classes=2, n=4)


def test_bad_generator_settings_name_the_argument():
    with pytest.raises(ValueError, match="`max_bins`"):
        MSTGenerator(max_bins=1)
    with pytest.raises(ValueError, match="`temperature`"):
        CharLMGenerator(temperature=0)
    with pytest.raises(ValueError, match="fitted before sampling"):
        MSTGenerator().sample(3)
