"""Validity and tightness of the white-box Gaussian-step audit: ``python benchmarks/dpsgd_validity.py [--seeds N]``.

A Gaussian step calibrated to ε ∈ {1, 4, 8} at δ = 1e-5 (q_c = 1), 10⁴ canary
observations and ~10⁶ others (100 steps × 10,000 slots), for two GDP bounds:
Clopper–Pearson at the preregistered threshold 0.5 (exact) and the rank-based
bound (approximate, :mod:`privaudit.stats.auc`). For each: the ratio of the
bound to ε over ``--seeds`` seeds (mean, min, max, share below 0.85), and the
number of 500 seeded audits (10³ canary observations each) whose 95% bound
exceeds the true ε. With ``--opacus-seeds N`` (default 20), the same bounds
for Opacus' DPOptimizer as shipped, audited per step (100 steps of a small
Tanh MLP, 10⁴ canary and 9·10⁴ other observations). Writes
benchmarks/results/dpsgd_validity.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from privaudit._core.results import library_versions
from privaudit.canaries.gradient import GradientCanary
from privaudit.observation.gradient import collect_gradient_observations
from privaudit.stats.auc import gdp_auc_lower_bound
from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.conversions import gdp_epsilon, gdp_mu

DELTA = 1e-5


def gaussian(sigma, seed):
    rng = np.random.default_rng(seed)
    return lambda rows: (rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)).sum(0) + rng.normal(0, sigma, rows.shape[1])


BOUNDS = {
    "clopper_pearson": lambda obs: epsilon_lower_bound(obs.in_scores, obs.out_scores, delta=DELTA, method="gdp", threshold=0.5).epsilon,
    "rank": lambda obs: gdp_auc_lower_bound(obs.in_scores, obs.out_scores, delta=DELTA).epsilon,
}


def bounds(sigma, seed, steps, slots):
    obs = collect_gradient_observations(
        gaussian(sigma, 10_000 + seed),
        num_steps=steps,
        canaries_per_step=100,
        num_slots=slots,
        clip_norm=1.0,
        canary=GradientCanary(slot_size=1, norm=100.0),
        seed=seed,
    )
    return {name: bound(obs) for name, bound in BOUNDS.items()}


def opacus_bounds(epsilon, seed):
    import warnings

    import torch
    from opacus import PrivacyEngine

    from privaudit.integrations.opacus import opacus_release

    sigma = 1.0 / gdp_mu(epsilon, DELTA)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    x, y = torch.randn(1000, 20, generator=generator), torch.randint(0, 3, (1000,), generator=generator)
    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), data_loader=loader, noise_multiplier=sigma, max_grad_norm=1.0
        )
        release, auditor = opacus_release(model, optimizer, loader, torch.nn.functional.cross_entropy, 8000)
        obs = collect_gradient_observations(
            release,
            num_steps=100,
            canaries_per_step=100,
            num_slots=1000,
            clip_norm=1.0,
            denominator=auditor.denominator,
            canary=GradientCanary(norm=100.0),
            seed=seed,
        )
    return {name: bound(obs) / epsilon for name, bound in BOUNDS.items()}


def ratio_summary(ratios):
    ratios = np.asarray(ratios)
    return {
        "ratio_mean": float(ratios.mean()),
        "ratio_min": float(ratios.min()),
        "ratio_max": float(ratios.max()),
        "share_below_0.85": float(np.mean(ratios < 0.85)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--opacus-seeds", type=int, default=20)
    args = parser.parse_args()
    for option in ("seeds", "opacus_seeds"):
        if getattr(args, option) < 0:
            parser.error(f"--{option.replace('_', '-')} must be at least 0, got {getattr(args, option)}")
    out = {"seeds": args.seeds, "opacus_seeds": args.opacus_seeds, "trials": 500, "delta": DELTA, "versions": library_versions(), "epsilons": {}}
    for epsilon in (1.0, 4.0, 8.0) if args.seeds else ():
        sigma = 1.0 / gdp_mu(epsilon, DELTA)
        truth = gdp_epsilon(1.0 / sigma, DELTA)
        tight = [bounds(sigma, seed, 100, 10_000) for seed in range(args.seeds)]
        small = [bounds(sigma, 1000 + trial, 10, 1000) for trial in range(500)]
        summary = {}
        for name in BOUNDS:
            summary[name] = ratio_summary([row[name] / epsilon for row in tight])
            summary[name]["exceed_of_500"] = int(sum(row[name] > truth for row in small))
        out["epsilons"][str(epsilon)] = summary
        print(epsilon, json.dumps(summary))
    out["opacus"] = {}
    for epsilon in (1.0, 4.0, 8.0) if args.opacus_seeds else ():
        rows = [opacus_bounds(epsilon, seed) for seed in range(args.opacus_seeds)]
        out["opacus"][str(epsilon)] = {name: ratio_summary([row[name] for row in rows]) for name in BOUNDS}
        print("opacus", epsilon, json.dumps(out["opacus"][str(epsilon)]))
    path = Path(__file__).parent / "results" / "dpsgd_validity.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
