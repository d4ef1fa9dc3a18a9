"""``privaudit demo``: the statistical core on built-in, generated data.

Every section simulates observations whose true privacy is known, runs the
audit, and reports the audit's number next to the truth. No download: the
data are generated from ``seed``.

>>> report = run_quick_demo(seed=0, sections=("gaussian",))
>>> sorted(report.sections)
['gaussian']
>>> report.sections["gaussian"]["epsilon lower bound (GDP, Clopper-Pearson)"] <= report.sections["gaussian"]["true epsilon"]
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ._core.results import Result

__all__ = ["DemoReport", "run_quick_demo"]

DELTA = 1e-5


@dataclasses.dataclass(frozen=True)
class DemoReport(Result):
    """Sections of (quantity → number) pairs, with the seed that generated them."""

    seed: int
    sections: dict

    def rows(self) -> list[tuple[str, str, str]]:
        """(section, quantity, formatted value) triples, for a table."""
        out = []
        for section, quantities in self.sections.items():
            for name, value in quantities.items():
                text = f"{value:.4g}" if isinstance(value, float) else str(value)
                out.append((section, name, text))
        return out


def _gaussian(rng: np.random.Generator) -> dict:
    """White-box audit of one Gaussian-mechanism step (Tight Auditing §4.1)."""
    from .stats.bounds import epsilon_lower_bound
    from .stats.conversions import gaussian_epsilon

    sigma, n = 1.0, 10_000
    out_scores = rng.normal(0.0, sigma, n)
    in_scores = rng.normal(1.0, sigma, n)
    seed = int(rng.integers(2**31))
    gdp = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, seed=seed)
    eps_delta = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, method="eps-delta", seed=seed)
    bayes = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, interval="bayes", seed=seed)
    return {
        "noise multiplier": sigma,
        "observations per side": n,
        "true epsilon": gaussian_epsilon(sigma, DELTA),
        "epsilon lower bound (GDP, Clopper-Pearson)": gdp.epsilon,
        "epsilon lower bound ((eps, delta), Clopper-Pearson)": eps_delta.epsilon,
        "epsilon credible bound (GDP, Bayes)": bayes.epsilon,
        "epsilon posterior median (GDP, Bayes)": bayes.epsilon_median,
    }


def _dpsgd(rng: np.random.Generator) -> dict:
    """A per-step bound composed over DP-SGD's steps (Tight Auditing §5.5)."""
    from .stats.bounds import epsilon_lower_bound
    from .stats.conversions import gaussian_epsilon
    from .stats.pld import step_to_end_epsilon

    sigma, q, steps = 1.0, 0.01, 1000
    in_scores, out_scores = rng.normal(1.0 / sigma, 1.0, 5000), rng.normal(0.0, 1.0, 5000)
    step = epsilon_lower_bound(in_scores, out_scores, delta=DELTA, seed=int(rng.integers(2**31)))
    end = step_to_end_epsilon(step.epsilon, delta=DELTA, num_steps=steps, sampling_prob=q)
    return {
        "sampling probability": q,
        "steps": steps,
        "per-step epsilon lower bound": step.epsilon,
        "end-to-end epsilon estimate": end.epsilon,
        "end-to-end epsilon (accountant)": gaussian_epsilon(sigma, DELTA, sampling_prob=q, num_steps=steps),
    }


def _membership(rng: np.random.Generator) -> dict:
    """Membership-inference metrics of a score with AUC Φ(1/√2)."""
    from scipy import stats

    from .stats.metrics import roc_auc, tpr_at_fpr

    in_scores, out_scores = rng.normal(1.0, 1.0, 5000), rng.normal(0.0, 1.0, 5000)
    tpr = tpr_at_fpr(in_scores, out_scores, [0.01])
    return {
        "AUC": float(roc_auc(in_scores, out_scores)),
        "AUC (theory)": float(stats.norm.cdf(1 / np.sqrt(2))),
        "TPR at FPR 1%": float(tpr[0]),
        "TPR at FPR 1% (theory)": float(stats.norm.sf(stats.norm.isf(0.01) - 1.0)),
    }


def _exposure(rng: np.random.Generator) -> dict:
    """Canary exposure among 10⁵ references, and the ε it implies (Jagielski's note)."""
    from .stats.exposure import epsilon_from_exposure, exposure, exposure_extrapolated, random_guessing_exposure

    # log-perplexities in bits: references ~ N(40, 3²); memorised canaries sit 6 bits lower
    references = rng.normal(40.0, 3.0, 100_000)
    canaries = rng.normal(34.0, 3.0, 200)
    ranked = exposure(canaries, references)
    bound = epsilon_from_exposure(canaries, references)
    return {
        "median exposure (sampled)": float(np.median(ranked.exposures)),
        "median exposure (skew-normal extrapolation)": float(np.median(exposure_extrapolated(canaries, references).exposures)),
        "median exposure if nothing is memorised": random_guessing_exposure(references.size).median,
        "epsilon estimate ln2 (median exposure - 1)": float(np.log(2) * (np.median(ranked.exposures) - 1)),
        "epsilon lower bound (Clopper-Pearson)": bound.epsilon,
    }


def _one_shot(rng: np.random.Generator) -> dict:
    """One-shot estimation with random canaries (One-shot Table 2 setting, smaller d)."""
    from .stats.conversions import gaussian_epsilon, gdp_mu
    from .stats.one_shot import epsilon_lower_bound_cosines, epsilon_one_shot

    d, k, delta = 10**6, 1000, 1e-6
    sigma = 1.0 / gdp_mu(3.0, delta)  # the Gaussian mechanism calibrated to ε = 3
    cosines = rng.normal(1.0 / (sigma * np.sqrt(d)), 1.0 / np.sqrt(d), k)  # Theorem 3.3's limit
    return {
        "noise multiplier": sigma,
        "true epsilon (delta = 1e-6)": gaussian_epsilon(sigma, delta),
        "epsilon estimate (equal variance)": epsilon_one_shot(cosines, dimension=d, delta=delta, equal_variance=True).epsilon,
        "epsilon estimate (fitted variance)": epsilon_one_shot(cosines, dimension=d, delta=delta).epsilon,
        "epsilon lower bound from cosines": epsilon_lower_bound_cosines(cosines, dimension=d, delta=delta).epsilon,
    }


def _one_run(rng: np.random.Generator) -> dict:
    """One training run, m = 10⁴ canaries, a randomized-response attack with ε = 2."""
    from .stats.one_run import epsilon_one_run_sweep

    epsilon, m = 2.0, 10_000
    member = rng.random(m) < 0.5
    correct = rng.random(m) < np.exp(epsilon) / (1 + np.exp(epsilon))
    scores = np.where(correct, member, ~member) + rng.random(m) * 1e-3
    result = epsilon_one_run_sweep(scores, member, delta=DELTA)
    return {"true epsilon": epsilon, "epsilon lower bound": result.epsilon, "guesses used": result.num_guesses}


def _panoramia(rng: np.random.Generator) -> dict:
    """PANORAMIA on synthetic scores: a c-close generator and an MIA that sees the model."""
    from .stats.panoramia import panoramia_bounds

    m = 10_000
    member = rng.random(m) < 0.5
    baseline = member * 0.5 + rng.normal(size=m)
    mia = member * 1.5 + rng.normal(size=m)
    result = panoramia_bounds(baseline, mia, member)
    return {"c lower bound": result.c_lb, "c + epsilon lower bound": result.c_plus_epsilon_lb, "epsilon tilde (estimate)": result.epsilon_tilde}


SECTIONS: dict[str, Callable[[np.random.Generator], dict]] = {
    "gaussian": _gaussian,
    "dp-sgd": _dpsgd,
    "membership": _membership,
    "exposure": _exposure,
    "one-shot": _one_shot,
    "one-run": _one_run,
    "panoramia": _panoramia,
}


def run_quick_demo(*, seed: int = 0, sections=None) -> DemoReport:
    """Run the demo sections (all by default) with one seed; each section gets a child seed."""
    names = list(SECTIONS) if sections is None else list(sections)
    unknown = [name for name in names if name not in SECTIONS]
    if unknown:
        listed = ", ".join(repr(name) for name in SECTIONS)
        raise ValueError(f"`sections` must be among {listed}, got {unknown[0]!r}")
    children = np.random.SeedSequence(seed).spawn(len(SECTIONS))
    child_of = dict(zip(SECTIONS, children, strict=True))
    results = {name: SECTIONS[name](np.random.default_rng(child_of[name])) for name in names}
    return DemoReport(seed=seed, sections=results)
