"""Update canaries: reproducible unit directions, chunked cosines and sums against brute force, bounded chunks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit.canaries.update import UpdateCanaries


@pytest.mark.parametrize("seed", [0, 7, 12345])
def test_directions_are_reproducible_unit_vectors(seed):
    canaries = UpdateCanaries(num_canaries=5, dimension=300, seed=seed)
    again = UpdateCanaries(num_canaries=50, dimension=300, seed=seed)  # depends on (seed, index) alone
    for i in range(5):
        u = canaries.direction(i)
        assert u.dtype == np.float64 and u.shape == (300,)
        assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_array_equal(u, again.direction(i))
    assert not np.allclose(canaries.direction(0), canaries.direction(1))


def test_directions_are_uniform_on_the_sphere():
    # first coordinate of a uniform unit vector: (1 + x)/2 ~ Beta((d-1)/2, (d-1)/2) (One-shot Theorem 3.1)
    d, n = 20, 2000
    canaries = UpdateCanaries(num_canaries=n, dimension=10_000, seed=3)
    first = np.array([canaries._raw(i)[:d].astype(np.float64) for i in range(n)])
    first = first[:, 0] / np.linalg.norm(first, axis=1)  # the first d coordinates, renormalised, are uniform on S^{d-1}
    assert stats.kstest((1 + first) / 2, stats.beta((d - 1) / 2, (d - 1) / 2).cdf).pvalue > 1e-4


@pytest.mark.parametrize("budget_rows", [1, 3, 64])
def test_chunked_cosines_and_sums_match_brute_force(budget_rows):
    d = 400
    canaries = UpdateCanaries(num_canaries=10, dimension=d, seed=1)
    vector = np.random.default_rng(5).standard_normal(d)
    brute = np.array([canaries.direction(i) @ vector for i in range(10)]) / np.linalg.norm(vector)
    budget = budget_rows * 4 * d
    np.testing.assert_allclose(canaries.cosines(vector, memory_budget_bytes=budget), brute, atol=1e-6)
    chunks = list(canaries.chunks(memory_budget_bytes=budget))
    assert max(block.nbytes for _, block in chunks) <= budget
    assert sorted(np.concatenate([i for i, _ in chunks]).tolist()) == list(range(10))
    brute_sum = sum(2.0 * canaries.direction(i) for i in (2, 5))
    np.testing.assert_allclose(canaries.sum_of([2, 5], weights=[2.0, 2.0], memory_budget_bytes=budget), brute_sum, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_canaries": 10, "dimension": 10}, "`num_canaries` must be < `dimension`"),
        ({"num_canaries": 1, "dimension": 1}, "`dimension` must be an integer in [2, inf)"),
        ({"num_canaries": 0, "dimension": 10}, "`num_canaries` must be an integer in [1, inf)"),
        ({"num_canaries": 1, "dimension": 10, "seed": -1}, "`seed` must be an integer in [0, inf)"),
    ],
)
def test_bad_construction(kwargs, message):
    with pytest.raises(ValueError) as error:
        UpdateCanaries(**{"seed": 0, **kwargs})
    assert message in str(error.value)


def test_bad_calls():
    canaries = UpdateCanaries(num_canaries=3, dimension=100, seed=0)
    with pytest.raises(ValueError, match="`index` must be an integer in \\[0, 2\\]"):
        canaries.direction(3)
    with pytest.raises(ValueError, match="`memory_budget_bytes` must be an integer in \\[400, inf\\)"):
        canaries.cosines(np.ones(100), memory_budget_bytes=10)
    with pytest.raises(ValueError, match="`vector` must have shape \\(100,\\)"):
        canaries.cosines(np.ones(5))
    with pytest.raises(ValueError, match="`vector` must not be all zeros"):
        canaries.cosines(np.zeros(100))
