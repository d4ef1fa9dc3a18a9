"""benchmarks/lm_dp_ceiling.py: what DP-Adam keeps of a canary's signal, checked where it has a closed form, and a plain sum keeps all of it."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("scipy")
pytest.importorskip("transformers")
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def ceiling():
    sys.path.insert(0, str(BENCHMARKS))  # lm_dp_ceiling.py imports its siblings lm_dp.py and results_io.py
    try:
        import lm_dp_ceiling

        yield lm_dp_ceiling
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_one_adam_step_keeps_the_amplitude_of_a_sign(ceiling):
    # Adam's first step is lr × g / |g| (bias-corrected, eps negligible): E[sign(s + σZ)] = 2Φ(s/σ) - 1, so the
    # efficiency is (2Φ(r) - 1) / r at r = s/σ = 0.03, about √(2/π); 2e6 coordinates give it to about 1% (one standard error)
    setting = dataclasses.replace(ceiling.Setting(), epochs=1)
    sigma = 2.4
    expected = (2 * 0.5 * math.erfc(-0.03 / math.sqrt(2)) - 1) / 0.03
    measured = ceiling.adam_efficiency(setting, sigma, coordinates=2_000_000, share=0.03 * sigma, seed=0)
    assert measured == pytest.approx(expected, rel=0.04)
    assert expected == pytest.approx(math.sqrt(2 / math.pi), rel=1e-3)


def test_five_adam_steps_match_kingma_and_bas_algorithm_written_out(ceiling):
    # the same noise draw (the function's generator and seed) through Adam as Kingma and Ba write it, in numpy:
    # m and v moving averages, bias-corrected, the step lr × m̂ / (√v̂ + eps), against the gradient
    setting, sigma, share, seed, coordinates = ceiling.Setting(), 2.4, 0.072, 1, 200_000
    noise = (torch.randn(setting.epochs, coordinates, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * sigma).numpy()

    def adam(signal):
        weights, m, v = np.zeros(coordinates), np.zeros(coordinates), np.zeros(coordinates)
        for step in range(setting.epochs):
            gradient = signal + noise[step]
            m, v = 0.9 * m + 0.1 * gradient, 0.999 * v + 0.001 * gradient**2
            weights -= setting.learning_rate * (m / (1 - 0.9 ** (step + 1))) / (np.sqrt(v / (1 - 0.999 ** (step + 1))) + 1e-8)
        return weights

    inside, outside = adam(share), adam(0.0)
    expected = (outside - inside).mean() / outside.std(ddof=1) / (math.sqrt(setting.epochs) * share / sigma)
    assert ceiling.adam_efficiency(setting, sigma, coordinates=coordinates, share=share, seed=seed) == pytest.approx(expected, rel=1e-6)
    assert math.sqrt(2 / math.pi) * 0.9 < expected < 1  # below the sums' matched filter, near a sign's


def test_the_efficiency_is_the_same_at_any_learning_rate(ceiling):
    # the docs' promise: Adam's step is lr × m̂ / (√v̂ + eps), so the learning rate scales the updates with and without the
    # canary alike and cancels from the ratio (eps, 1e-8 against gradients of order σ, moves it by about 1e-9)
    setting, sigma = ceiling.Setting(), 2.4
    rates = [dataclasses.replace(setting, learning_rate=rate) for rate in (1e-4, 1e-3, 1e-2, 1.0)]
    values = [ceiling.adam_efficiency(each, sigma, coordinates=100_000, share=0.072, seed=2) for each in rates]
    assert values == pytest.approx([values[1]] * 4, rel=1e-7)
    assert values[1] != pytest.approx(1.0, abs=0.05)  # not a trivial constant: Adam keeps less than the sums
