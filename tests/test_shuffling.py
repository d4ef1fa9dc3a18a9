"""The Monte Carlo lower bound on ε(δ) of shuffled DP-SGD, against oracles computed without it.

* S = 1: the pair is E composed Gaussian steps, exactly √E/σ-GDP
  (:func:`~privaudit.stats.conversions.gaussian_epsilon`);
  for either pair (the opposed pair's spikes 2 and 1 at the same step differ by 1);
* S = 2, E = 1: each pair's hockey-stick divergences by quadrature on a 2-D
  grid (:func:`_two_step_epsilon`), no sampling.

The window each bound must land in: at most the pair's ε(δ) (the bound's
claim, at confidence 0.999 here), and at least the pair's ε at δ_high, the δ
at which k* or more exceedances of n are all but certain (P < 1e-4: the
Clopper–Pearson upper bound on k* − 1 of n).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy import optimize, stats

from privaudit.stats import shuffling
from privaudit.stats.conversions import gaussian_epsilon
from privaudit.stats.intervals import binomial_upper_bound
from privaudit.stats.shuffling import shuffled_epsilon_lower_bound


@functools.cache
def _two_step_grid(sigma: float, pair: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The base N(0, σ²)² weights and the densities p, q (against it) of one epoch of two steps, on a grid of ±9σ.

    A spike m at one of the two steps, uniformly: (φ(x₁ − m) + φ(x₂ − m)) / (2 φ(x₁) φ(x₂)) · φ(x₁)φ(x₂).
    P's spike is 1 (zero pair) or 2 (opposed pair), Q's 0 or 1 (converged: 4,801 points agree to 1e-8).
    """
    spike_p, spike_q = {"zero": (1.0, 0.0), "opposed": (2.0, 1.0)}[pair]
    grid = np.linspace(-9.0 * sigma, spike_p + 9.0 * sigma, 2401)
    weights = stats.norm.pdf(grid, scale=sigma) * (grid[1] - grid[0])

    def density(spike: float) -> np.ndarray:
        ratio = np.exp((spike * grid - spike**2 / 2.0) / sigma**2)  # φ(x − m)/φ(x) at noise σ
        return (ratio[:, None] + ratio[None, :]) / 2.0

    return np.outer(weights, weights), density(spike_p), density(spike_q)


def _two_step_deltas(sigma: float, epsilon: float, pair: str = "zero") -> tuple[float, float]:
    """δ_{P‖Q}(ε) = E[(p − e^ε q)_+] and δ_{Q‖P}(ε) = E[(q − e^ε p)_+] under the base, by quadrature."""
    weights, p, q = _two_step_grid(sigma, pair)
    return float((weights * np.maximum(p - np.exp(epsilon) * q, 0.0)).sum()), float((weights * np.maximum(q - np.exp(epsilon) * p, 0.0)).sum())


@functools.cache
def _two_step_epsilon(sigma: float, delta: float, pair: str = "zero") -> float:
    return float(optimize.brentq(lambda eps: max(_two_step_deltas(sigma, eps, pair)) - delta, 0.0, 20.0, xtol=1e-7))


def _delta_high(found) -> float:
    """The δ at which k* exceedances of n are certain but for 1e-4."""
    return float(binomial_upper_bound(found.needed - 1, found.samples, confidence=1.0 - 1e-4))


@pytest.mark.parametrize(("sigma", "epochs", "delta", "samples"), [(1.0, 1, 1e-3, 200_000), (0.8, 3, 1e-5, 500_000), (2.0, 10, 1e-4, 200_000)])
@pytest.mark.parametrize("pair", ["zero", "opposed"])
def test_one_step_per_epoch_is_e_composed_gaussians(sigma, epochs, delta, samples, pair):
    found = shuffled_epsilon_lower_bound(sigma, 1, epochs, delta, samples=samples, confidence=0.999, seed=3, pair=pair)
    exact = gaussian_epsilon(sigma, delta, num_steps=epochs, pessimistic=False)  # √E/σ-GDP, rounded down
    floor = gaussian_epsilon(sigma, _delta_high(found), num_steps=epochs, pessimistic=True)
    assert floor <= found.epsilon <= exact
    assert exact - found.epsilon < 0.1 * exact  # the window's width at these sample sizes
    assert abs(found.estimate - exact) < 0.05 * exact
    assert found.kind == "lower bound" and found.needed > 0


@pytest.mark.parametrize(("sigma", "delta"), [(0.7, 1e-3), (1.0, 1e-2)])
def test_two_steps_per_epoch_match_the_quadrature_of_the_pair(sigma, delta, monkeypatch):
    monkeypatch.setattr(shuffling, "_CHUNK_FLOATS", 20_000)  # many chunks: the running top-k is exercised
    found = shuffled_epsilon_lower_bound(sigma, 2, 1, delta, samples=200_000, confidence=0.999, seed=5, pair="zero")
    pair = _two_step_epsilon(sigma, delta)
    assert _two_step_epsilon(sigma, _delta_high(found)) <= found.epsilon <= pair
    assert abs(found.estimate - pair) < 0.05 * pair
    assert found.epsilon_add == found.epsilon > found.epsilon_remove  # adding the record is the worse direction
    assert pair < gaussian_epsilon(sigma, delta)  # shuffling two steps amplifies


@pytest.mark.parametrize(("sigma", "delta"), [(0.7, 1e-3), (1.0, 1e-2)])
def test_the_opposed_pair_matches_its_quadrature_and_leaks_more_than_the_zero_pair(sigma, delta):
    found = shuffled_epsilon_lower_bound(sigma, 2, 1, delta, samples=200_000, confidence=0.999, seed=5, pair="opposed")
    opposed = _two_step_epsilon(sigma, delta, "opposed")
    assert _two_step_epsilon(sigma, _delta_high(found), "opposed") <= found.epsilon <= opposed
    assert abs(found.estimate - opposed) < 0.05 * opposed
    # the short batch's position gives the record away: more than the zero pair
    assert opposed > _two_step_epsilon(sigma, delta, "zero") and found.pair == "opposed"


@pytest.mark.parametrize(
    ("steps", "pair", "truth"),
    [
        (1, "zero", lambda: gaussian_epsilon(1.0, 1e-2, pessimistic=False)),
        (2, "zero", lambda: _two_step_epsilon(1.0, 1e-2)),
        (2, "opposed", lambda: _two_step_epsilon(1.0, 1e-2, "opposed")),
    ],
)
def test_the_bound_exceeds_the_true_epsilon_in_at_most_one_minus_confidence_of_runs(steps, pair, truth):
    runs, confidence, true_epsilon = 300, 0.8, truth()
    failures = sum(
        shuffled_epsilon_lower_bound(1.0, steps, 1, 1e-2, samples=2_000, confidence=confidence, seed=seed, pair=pair).epsilon > true_epsilon
        for seed in range(runs)
    )
    assert failures <= stats.binom.ppf(1.0 - 1e-4, runs, 1.0 - confidence)


@pytest.mark.parametrize(("sigma", "steps", "epochs"), [(0.5, 10, 1), (0.6, 4, 3), (1.0, 10, 3), (2.0, 29, 10)])
def test_the_bound_never_exceeds_e_gaussian_steps_without_amplification(sigma, steps, epochs):
    found = shuffled_epsilon_lower_bound(sigma, steps, epochs, 1e-4, samples=50_000, confidence=0.999)
    # the finding's upper bound (integrations.opacus_loop.shuffled_epsilon): √E/σ-GDP
    assert 0.0 <= found.epsilon <= found.estimate + 0.5 and found.epsilon <= gaussian_epsilon(sigma, 1e-4, num_steps=epochs)


def test_the_same_seed_gives_the_same_bound_and_another_seed_another():
    first = shuffled_epsilon_lower_bound(1.0, 5, 2, 1e-3, samples=10_000, seed=7)
    assert first == shuffled_epsilon_lower_bound(1.0, 5, 2, 1e-3, samples=10_000, seed=7) and first.seed == 7
    assert first.epsilon != shuffled_epsilon_lower_bound(1.0, 5, 2, 1e-3, samples=10_000, seed=8).epsilon
    assert first.to_dict()["result_type"] == "ShuffledEpsilonBound"


@pytest.mark.parametrize(("samples", "delta"), [(1_000, 1e-3), (50_000, 1e-5), (10, 0.2)])
def test_needed_is_the_fewest_exceedances_whose_clopper_pearson_bound_passes_delta(samples, delta):
    found = shuffled_epsilon_lower_bound(1.0, 3, 1, delta, samples=samples)
    k = np.arange(1, samples + 1)
    lower = stats.beta.ppf(0.025, k, samples - k + 1)  # one-sided at 97.5%: the 95% split over two directions
    assert found.needed == k[lower > delta][0]


def test_too_few_samples_certify_nothing():
    found = shuffled_epsilon_lower_bound(1.0, 3, 1, 0.5, samples=1)  # 1 of 1 has a 97.5% lower bound of 0.025 < δ
    assert found.needed == 0 and found.epsilon == found.epsilon_add == found.epsilon_remove == 0.0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"sigma": 0.0}, r"`sigma` must be > 0, got 0"),
        ({"sigma": float("nan")}, r"`sigma` must be a real number, got nan"),
        ({"steps_per_epoch": 0}, r"`steps_per_epoch` must be an integer in \[1, inf\), got 0"),
        ({"epochs": 1.5}, r"`epochs` must be an integer in \[1, inf\), got 1.5"),
        ({"delta": 1.0}, r"`delta` must be in \(0, 1\), got 1"),
        ({"samples": 0}, r"`samples` must be an integer in \[1, 10000000000\], got 0"),
        ({"confidence": 1.0}, r"`confidence` must be in \(0, 1\), got 1"),
        ({"seed": -1}, r"`seed` must be an integer in \[0, \d+\], got -1"),
        ({"seed": None}, r"`seed` must be an integer in \[0, \d+\], got None"),
        ({"pair": "worst"}, r"`pair` must be one of \['opposed', 'zero'\], got 'worst'"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(arguments, message):
    settings = {"sigma": 1.0, "steps_per_epoch": 2, "epochs": 1, "delta": 1e-3, "samples": 100} | arguments
    with pytest.raises(ValueError, match=message):
        shuffled_epsilon_lower_bound(settings.pop("sigma"), settings.pop("steps_per_epoch"), settings.pop("epochs"), settings.pop("delta"), **settings)
