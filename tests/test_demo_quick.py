"""`privaudit demo --quick` at seed 0: every number it prints, recomputed here from the same seeds through the public API.

The expected values are not copies of the demo's output: each section's data
are drawn again from the demo's seeding scheme (one child of
``SeedSequence(seed)`` per section, in the demo's order) and the numbers are
computed again with the public functions of :mod:`privaudit`. A change in the
statistical core, in the seeding or in the demo's wiring changes them.
"""

from __future__ import annotations

import json

import numpy as np
from scipy import stats

import privaudit as pa

DELTA = 1e-5
ORDER = ("gaussian", "dp-sgd", "membership", "exposure", "one-shot", "one-run", "panoramia")  # the demo's sections, in seeding order


def _gaussian(rng):
    sigma, n = 1.0, 10_000
    out_scores, in_scores = rng.normal(0.0, sigma, n), rng.normal(1.0, sigma, n)
    seed = int(rng.integers(2**31))
    bayes = pa.epsilon_lower_bound(in_scores, out_scores, delta=DELTA, interval="bayes", seed=seed)
    return {
        "noise multiplier": sigma,
        "observations per side": n,
        "true epsilon": pa.gaussian_epsilon(sigma, DELTA),
        "epsilon lower bound (GDP, Clopper-Pearson)": pa.epsilon_lower_bound(in_scores, out_scores, delta=DELTA, seed=seed).epsilon,
        "epsilon lower bound ((eps, delta), Clopper-Pearson)": pa.epsilon_lower_bound(
            in_scores, out_scores, delta=DELTA, method="eps-delta", seed=seed
        ).epsilon,
        "epsilon credible bound (GDP, Bayes)": bayes.epsilon,
        "epsilon posterior median (GDP, Bayes)": bayes.epsilon_median,
    }


def _dpsgd(rng):
    sigma, q, steps = 1.0, 0.01, 1000
    in_scores, out_scores = rng.normal(1.0, 1.0, 5000), rng.normal(0.0, 1.0, 5000)
    step = pa.epsilon_lower_bound(in_scores, out_scores, delta=DELTA, seed=int(rng.integers(2**31)))
    return {
        "sampling probability": q,
        "steps": steps,
        "per-step epsilon lower bound": step.epsilon,
        "end-to-end epsilon estimate": pa.step_to_end_epsilon(step.epsilon, delta=DELTA, num_steps=steps, sampling_prob=q).epsilon,
        "end-to-end epsilon (accountant)": pa.gaussian_epsilon(sigma, DELTA, sampling_prob=q, num_steps=steps),
    }


def _membership(rng):
    in_scores, out_scores = rng.normal(1.0, 1.0, 5000), rng.normal(0.0, 1.0, 5000)
    return {
        "AUC": float(pa.roc_auc(in_scores, out_scores)),
        "AUC (theory)": float(stats.norm.cdf(1 / np.sqrt(2))),
        "TPR at FPR 1%": float(pa.tpr_at_fpr(in_scores, out_scores, [0.01])[0]),
        "TPR at FPR 1% (theory)": float(stats.norm.sf(stats.norm.isf(0.01) - 1.0)),
    }


def _exposure(rng):
    references, canaries = rng.normal(40.0, 3.0, 100_000), rng.normal(34.0, 3.0, 200)
    median = float(np.median(pa.exposure(canaries, references).exposures))
    return {
        "median exposure (sampled)": median,
        "median exposure (skew-normal extrapolation)": float(np.median(pa.exposure_extrapolated(canaries, references).exposures)),
        "median exposure if nothing is memorised": pa.random_guessing_exposure(references.size).median,
        "epsilon estimate ln2 (median exposure - 1)": float(np.log(2) * (median - 1)),
        "epsilon lower bound (Clopper-Pearson)": pa.epsilon_from_exposure(canaries, references).epsilon,
    }


def _one_shot(rng):
    d, k, delta = 10**6, 1000, 1e-6
    sigma = 1.0 / pa.gdp_mu(3.0, delta)
    cosines = rng.normal(1.0 / (sigma * np.sqrt(d)), 1.0 / np.sqrt(d), k)
    return {
        "noise multiplier": sigma,
        "true epsilon (delta = 1e-6)": pa.gaussian_epsilon(sigma, delta),
        "epsilon estimate (equal variance)": pa.epsilon_one_shot(cosines, dimension=d, delta=delta, equal_variance=True).epsilon,
        "epsilon estimate (fitted variance)": pa.epsilon_one_shot(cosines, dimension=d, delta=delta).epsilon,
        "epsilon lower bound from cosines": pa.epsilon_lower_bound_cosines(cosines, dimension=d, delta=delta).epsilon,
    }


def _one_run(rng):
    epsilon, m = 2.0, 10_000
    member = rng.random(m) < 0.5
    correct = rng.random(m) < np.exp(epsilon) / (1 + np.exp(epsilon))
    scores = np.where(correct, member, ~member) + rng.random(m) * 1e-3
    sweep = pa.epsilon_one_run_sweep(scores, member, delta=DELTA)
    return {"true epsilon": epsilon, "epsilon lower bound": sweep.epsilon, "guesses used": sweep.num_guesses}


def _panoramia(rng):
    m = 10_000
    member = rng.random(m) < 0.5
    baseline = member * 0.5 + rng.normal(size=m)
    mia = member * 1.5 + rng.normal(size=m)
    bounds = pa.panoramia_bounds(baseline, mia, member)
    return {"c lower bound": bounds.c_lb, "c + epsilon lower bound": bounds.c_plus_epsilon_lb, "epsilon tilde (estimate)": bounds.epsilon_tilde}


def expected_sections(seed: int, names=ORDER) -> dict:
    compute = {
        "gaussian": _gaussian,
        "dp-sgd": _dpsgd,
        "membership": _membership,
        "exposure": _exposure,
        "one-shot": _one_shot,
        "one-run": _one_run,
        "panoramia": _panoramia,
    }
    children = np.random.SeedSequence(seed).spawn(len(ORDER))
    return {name: compute[name](np.random.default_rng(child)) for name, child in zip(ORDER, children, strict=True) if name in names}


def test_quick_demo_numbers_at_seed_0_match_an_independent_computation(cli):
    code, stdout, stderr = cli(["demo", "--quick", "--seed", "0", "--json"])
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["seed"] == 0 and list(report["sections"]) == list(ORDER)
    expected = json.loads(json.dumps(expected_sections(0)))  # the same JSON round trip as the command's output
    for name in ORDER:
        assert report["sections"][name] == expected[name], name  # identical, not approximately equal
    # and the numbers mean what the demo says: bounds below the truth they audit
    gaussian, one_shot = report["sections"]["gaussian"], report["sections"]["one-shot"]
    assert gaussian["epsilon lower bound (GDP, Clopper-Pearson)"] <= gaussian["true epsilon"]
    assert one_shot["epsilon lower bound from cosines"] <= one_shot["true epsilon (delta = 1e-6)"]
    assert report["sections"]["one-run"]["epsilon lower bound"] <= report["sections"]["one-run"]["true epsilon"]


def test_quick_demo_table_shows_the_same_numbers(cli):
    code, stdout, stderr = cli(["demo", "--quick"])
    assert code == 0, stderr
    headline = expected_sections(0, names=("gaussian",))["gaussian"]["epsilon lower bound (GDP, Clopper-Pearson)"]
    assert f"{headline:.4g}" in stdout
