"""Validity and tightness of the white-box Gaussian-step audit: ``python benchmarks/dpsgd_validity.py``.

A Gaussian step calibrated to ε ∈ {1, 4, 8} at δ = 1e-5 (q_c = 1), 10⁴ canary
observations and ~10⁶ others (100 steps × 10,000 slots): the GDP/Clopper–Pearson
bound's ratio to ε over 20 seeds, and the number of 500 seeded audits (10³
canary observations each) whose 95% bound exceeds the true ε. Writes
benchmarks/results/dpsgd_validity.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from privaudit.audits.whitebox import collect_gradient_observations
from privaudit.canaries.gradient import GradientCanary
from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.conversions import gdp_epsilon, gdp_mu

DELTA = 1e-5


def gaussian(sigma, seed):
    rng = np.random.default_rng(seed)
    return lambda rows: (rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)).sum(0) + rng.normal(0, sigma, rows.shape[1])


def bound(sigma, seed, steps, slots):
    obs = collect_gradient_observations(
        gaussian(sigma, 10_000 + seed), num_steps=steps, canaries_per_step=100, num_slots=slots, clip_norm=1.0, canary=GradientCanary(slot_size=1, norm=100.0), seed=seed
    )
    return epsilon_lower_bound(obs.in_scores, obs.out_scores, delta=DELTA, method="gdp", threshold=0.5).epsilon


def main():
    out = {}
    for epsilon in (1.0, 4.0, 8.0):
        sigma = 1.0 / gdp_mu(epsilon, DELTA)
        ratios = [bound(sigma, seed, 100, 10_000) / epsilon for seed in range(20)]
        truth = gdp_epsilon(1.0 / sigma, DELTA)
        exceed = sum(bound(sigma, 1000 + trial, 10, 1000) > truth for trial in range(500))
        out[str(epsilon)] = {"ratio_mean": float(np.mean(ratios)), "ratio_min": float(np.min(ratios)), "ratio_max": float(np.max(ratios)), "exceed_of_500": int(exceed)}
        print(epsilon, out[str(epsilon)])
    path = Path(__file__).parent / "results" / "dpsgd_validity.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
