"""Bound ÷ true ε across privaudit's families, where the true ε is known: ``python benchmarks/tightness.py [--seeds N] [--quick] [--only FAMILY,...]``.

One row per reference case, each at the family's default budget and at 10×
it, the mean and the minimum of bound ÷ truth over seeds (and, for the
mechanism rows, how many seeds rejected the claim and the seconds per
audit). The truth column says how the true ε is known:

* **closed form**: Laplace (the shift over the scale), the Gaussian
  mechanism (the exact ε(δ) of Balle and Wang 2018, through dp_accounting),
  the clipped mean over the default domain;
* **exact enumeration**: the exponential mechanism, every output's
  probability on D and on each neighbour of D;
* **the accountant (an upper bound)**: DP-SGD and the Opacus fine-tunes,
  whose true ε is at most the accountant's, so bound ÷ claim is at most the
  true tightness.

Rows:

* mechanisms (:func:`privaudit.audits.mechanism.audit.audit_mechanism`, the
  default budget: 5,000 held-out + 2,000 pilot samples per side, the
  default statistics, learned ones included, and for a searched pair the
  default search): Laplace with a 2× and a 1.3× scale bug, the Gaussian
  mechanism at a sixth of its noise, the replace-one histogram bug, the
  forgotten lower clip (the pair searched, no domain given), the
  exponential-mechanism median without its /2;
* DP-SGD white box end to end (``privaudit audit one-run``'s
  :func:`~privaudit.audits.one_run.audit.run_one_run_audit` on its embedded
  default, as ``benchmarks/one_run_dpsgd.py`` runs it) at ε = 1, 4, 8;
* DP-SGD from the final model alone (``--only final-model``, not in the
  default set): the one-run audit with ``observe="final"`` (the hidden
  state, Dirac gradient canaries in every step), full batch and Poisson
  q = 0.05, m = ``--final-model-canaries``, bound ÷ the accountant's ε and
  ÷ Steinke et al.'s last-iterate heuristic (a heuristic, not a bound);
  ``--seed S`` runs one seed;
* mia canary mode (:func:`~privaudit.audits.mia.audit.run_mia_audit`, m = 300
  canaries of digits, the default 8 references) on three non-private user-style
  trainings of ``tests/own_models`` (the overfitted torch MLP, a scikit-learn
  random forest, a scikit-learn MLP), against the ceiling of m canaries
  (:func:`mia_ceiling`: every one of the m guessed right in one test, the
  most any design with m canaries can show) and, beside it, the design's own
  ceiling (its held-out canaries and guess counts);
* dpmm's MST and AIM at ε = 1 and 4 on statsmodels' ``fair`` (bound ÷ claim,
  the claim the truth's upper bound), and MST with its noise removed or run
  at ε = 10⁴ against a claim of 1, and a copying generator (bound ÷ its
  ceiling): ``--only dpmm``, in the dpmm extra's own environment (dpmm pins
  numpy 1.26; ``benchmarks/tightness_dpmm.py`` says how each seed runs);
* DP-SGD final model only (``--only final-model``,
  :func:`blackbox_init_rows`): ``privaudit audit blackbox`` on 1,000 digits
  records, the built-in MLP, full-batch DP-SGD at ε = 10 and 4, the
  mislabelled canary scored by its loss, from random weights (``--init
  average``) and from the auditor's crafted start (``--init worst-case``),
  beside Annamalai and De Cristofaro's 0.72 (MNIST, 1,000 records, ε = 10);
* the Opacus LM fine-tunes at ε = 4 and 8, white box and black box: read
  from the JSON files other benchmarks write (``benchmarks/lm_dp.py`` for
  the black box on privaudit's own DP-Adam loop,
  ``benchmarks/opacus_verdict_lm.py`` for the white box on the user's loop
  and, with ``--black-box``, the black box on the same loop); "not
  measured" with the command when absent.

``--quick``: two seeds, the default budget only, mechanisms only. Writes
``benchmarks/results/tightness.json`` (or ``--output``). Run from the
repository root with ``PYTHONPATH=src``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import mechanisms_reference as ref  # noqa: E402

import privaudit  # noqa: E402
from privaudit._core.results import library_versions  # noqa: E402
from privaudit.audits.mechanism.audit import audit_mechanism  # noqa: E402
from privaudit.stats.conversions import gaussian_epsilon  # noqa: E402

RESULTS = Path(__file__).parent / "results"
DEFAULT_BUDGET = {"samples": 5000, "pilot_samples": 2000, "search_samples": 1000}
TEN_TIMES = {key: 10 * value for key, value in DEFAULT_BUDGET.items()}
GAUSSIAN_SIGMA, GAUSSIAN_DELTA = 1.0, 1e-5
UNIT = np.linspace(0.0, 1.0, 10)


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr, exit status 2."""

    def error(self, message: str):  # noqa: D102 - argparse hook
        self.exit(2, f"{self.prog}: error: {message}\n")


@dataclasses.dataclass(frozen=True)
class MechanismCase:
    name: str
    mechanism: Callable
    dataset: np.ndarray
    neighbour: np.ndarray | None  # None: searched
    claim: dict
    truth: float
    truth_how: str


def _laplace(scale: float) -> Callable:
    def mechanism(dataset, size, rng):
        return np.clip(dataset, 0.0, 1.0).sum() + rng.laplace(0.0, scale, size)

    return mechanism


def _gaussian(dataset, size, rng):
    return np.clip(dataset, 0.0, 1.0).sum() + rng.normal(0.0, GAUSSIAN_SIGMA, size)


def gaussian_sample_ceiling(samples: int, *, sigma: float = 1.0, delta: float = 1e-5, confidence: float = 0.95) -> float:
    """The most a threshold test on ``samples`` outputs per side can certify of the Gaussian sum's ε(δ): its ceiling at this budget.

    The best threshold t known in advance, one test (no Bonferroni), the
    expected error counts (n·P[N(0, σ²) > t] and n·P[N(1, σ²) < t]) bounded
    by Clopper–Pearson at ``confidence`` as the mechanism tester bounds them,
    and ε read from them at ``delta``. Past this no sample-based test goes:
    the ε(δ) of a Gaussian at small δ lives in events of probability near δ.

    >>> round(gaussian_sample_ceiling(5000), 2), round(gaussian_sample_ceiling(50000), 2)
    (2.05, 2.7)
    """
    from scipy import stats as scipy_stats

    from privaudit.mechanisms.tester import _projected_upper
    from privaudit.stats.families import EpsilonDelta

    thresholds = np.linspace(-3.0, 8.0, 11_001) * sigma
    false_positive = _projected_upper(scipy_stats.norm.sf(thresholds, scale=sigma), samples, confidence)
    false_negative = _projected_upper(scipy_stats.norm.cdf(thresholds, loc=1.0, scale=sigma), samples, confidence)
    return float(np.max(EpsilonDelta(delta).parameter_from_errors(false_positive, false_negative)))


def _em_worst_pair() -> tuple[np.ndarray, np.ndarray, float]:
    """D (nine records in 0..9) and its neighbour of largest exact ε for the buggy median, by enumeration."""
    dataset = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8], dtype=np.int64)
    base = np.log(ref.em_median_probabilities(dataset, True))
    neighbours = [np.append(dataset, value) for value in range(ref.MEDIAN_CANDIDATES)] + [np.delete(dataset, i) for i in range(dataset.size)]
    losses = [float(np.max(np.abs(base - np.log(ref.em_median_probabilities(other, True))))) for other in neighbours]
    best = int(np.argmax(losses))
    return dataset, neighbours[best], losses[best]


def mechanism_cases() -> list[MechanismCase]:
    histogram_d = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=np.int64)
    histogram_n = histogram_d.copy()
    histogram_n[0] = 1  # one record moved from bin 0 to bin 1: two counts change by 1
    em_d, em_n, em_truth = _em_worst_pair()
    return [
        MechanismCase("Laplace sum, 2× scale bug", _laplace(0.5), UNIT, np.append(UNIT, 1.0), {"epsilon": 1.0}, 2.0, "closed form (shift 1 ÷ scale 0.5)"),
        MechanismCase(
            "Laplace sum, 1.3× scale bug", _laplace(1 / 1.3), UNIT, np.append(UNIT, 1.0), {"epsilon": 1.0}, 1.3, "closed form (shift 1 ÷ scale 1/1.3)"
        ),
        MechanismCase(
            "Gaussian sum, σ = 1 claimed (1, 1e-5)-DP (the noise that claim needs ÷ 4.86)",
            _gaussian,
            UNIT,
            np.append(UNIT, 1.0),
            {"epsilon": 1.0, "delta": GAUSSIAN_DELTA},
            gaussian_epsilon(GAUSSIAN_SIGMA, GAUSSIAN_DELTA),
            "closed form (exact Gaussian ε(δ), Balle and Wang 2018)",
        ),
        MechanismCase(
            "10-bin histogram, replace-one bug",
            ref.replace_histogram(True),
            histogram_d,
            histogram_n,
            {"epsilon": 1.0},
            2.0,
            "closed form (two counts move by 1)",
        ),
        MechanismCase(
            "clipped mean, lower clip forgotten (pair searched, no domain)",
            ref.clipped_mean(True),
            UNIT,
            None,
            {"epsilon": 1.0},
            2.0,
            "closed form over the default domain [-1, 2] (a record 1 replaced by -1)",
        ),
        MechanismCase(
            "exponential-mechanism median without its /2",
            ref.em_median(True),
            em_d,
            em_n,
            {"epsilon": 1.0},
            em_truth,
            "exact enumeration (every neighbour of D)",
        ),
    ]


def _summary(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "values": values}


def run_mechanism(case: MechanismCase, budget: dict, seeds: int) -> dict:
    results, started = [], time.perf_counter()
    for seed in range(seeds):
        results.append(audit_mechanism(case.mechanism, case.dataset, case.neighbour, seed=seed, **budget, **case.claim))
    seconds = (time.perf_counter() - started) / seeds
    ratios = [result.epsilon / case.truth for result in results]
    return {
        "ratio": _summary(ratios),
        "rejected": sum(result.rejected for result in results),
        "runs": seeds,
        "seconds_per_audit": seconds,
        "pairs": sorted({result.pair.how for result in results}),
        "best_statistics": sorted({result.tests[result.best_test].statistic for result in results}),
    }


def mechanism_rows(seeds: int, budgets: dict[str, dict], only: str | None = None) -> list[dict]:
    rows = []
    for case in mechanism_cases():
        if only is not None and only.lower() not in case.name.lower():
            continue
        row: dict[str, Any] = {
            "family": "mechanism",
            "case": case.name,
            "truth": case.truth,
            "truth_how": case.truth_how,
            "claim": case.claim,
            "pair": "searched" if case.neighbour is None else "given",
        }
        for label, budget in budgets.items():
            row[label] = run_mechanism(case, budget, seeds) | {"budget": budget}
            if case.mechanism is _gaussian:  # the ceiling of any threshold test at this many held-out samples, ÷ the truth
                row[label]["sample_ceiling_ratio"] = gaussian_sample_ceiling(budget["samples"], sigma=GAUSSIAN_SIGMA, delta=GAUSSIAN_DELTA) / case.truth
            print(f"{case.name} [{label}]: bound ÷ truth mean {row[label]['ratio']['mean']:.3f}, min {row[label]['ratio']['min']:.3f}", flush=True)
        rows.append(row)
    return rows


def dpsgd_rows(seeds: int, epsilons: tuple[float, ...], canaries: int | None = None) -> list[dict]:
    """DP-SGD white box end to end: the one-run audit's headline ÷ the accountant's ε, as benchmarks/one_run_dpsgd.py runs it (``canaries``: m, default the audit's)."""
    from privaudit.audits.one_run.audit import AUDIT, run_one_run_audit

    base = AUDIT.default_config()
    base = base if canaries is None else dataclasses.replace(base, num_canaries=canaries)
    rows = []
    for epsilon in epsilons:
        sigma = privaudit.gaussian_noise_multiplier(epsilon, 1e-5, sampling_prob=base.sampling_rate, num_steps=base.num_steps)
        ratios, started = [], time.perf_counter()
        for seed in range(seeds):
            result = run_one_run_audit(dataclasses.replace(base, noise_multiplier=sigma, delta=1e-5, seed=seed))
            ratios.append(result.bound.epsilon / epsilon)
        row = {
            "family": "dpsgd white box (one run)",
            "case": f"DP-SGD white box end to end (one run), digits MLP, ε = {epsilon:g}",
            "truth": epsilon,
            "truth_how": "the accountant (an upper bound)",
            "default": {
                "ratio": _summary(ratios),
                "seconds_per_run": (time.perf_counter() - started) / seeds,
                "canaries": base.num_canaries,
                "headline": f"{result.bound.method}: {result.bound.refuted or result.bound.family}",
            },
            "10x": {"not_measured": "10× the canaries (m = 10,000) is not run: each run would take 10× longer on 2 cores"},
        }
        print(f"{row['case']}: bound ÷ ε mean {row['default']['ratio']['mean']:.3f}", flush=True)
        rows.append(row)
    return rows


#: The final-model rows: (name, data sampling rate, canary rate); the canaries are Dirac gradient canaries in the hidden state.
FINAL_MODEL_SETTINGS = (
    ("full batch, canaries in every step (q = q_c = 1)", 1.0, None),
    ("Poisson q = 0.05, canaries sampled as examples (q_c = 0.05)", 0.05, None),
)


def final_model_rows(seeds: tuple[int, ...], epsilons: tuple[float, ...], canaries: int) -> list[dict]:
    """The hidden-state audit (``privaudit audit one-run --observe final``): only the final model read, bound ÷ the accountant's ε and ÷ the heuristic."""
    from privaudit.audits.one_run.audit import AUDIT, run_one_run_audit

    rows = []
    for name, rate, canary_rate in FINAL_MODEL_SETTINGS:
        for epsilon in epsilons:
            base = dataclasses.replace(AUDIT.default_config(), num_canaries=canaries, sampling_rate=rate, canary_rate=canary_rate, observe="final")
            sigma = privaudit.gaussian_noise_multiplier(epsilon, 1e-5, sampling_prob=rate, num_steps=base.num_steps)
            bounds, heuristics, tests, started = [], [], [], time.perf_counter()
            for seed in seeds:
                result = run_one_run_audit(dataclasses.replace(base, noise_multiplier=sigma, delta=1e-5, seed=seed))
                bounds.append(result.bound.epsilon)
                heuristics.append(result.heuristic.epsilon)
                tests.append(None if result.last_iterate is None else result.last_iterate.epsilon)
                print(
                    f"final model, {name}, ε = {epsilon:g}, seed {seed}: bound {bounds[-1]:.3f}, heuristic {heuristics[-1]:.3f}, test of the heuristic {tests[-1]}",
                    flush=True,
                )
            heuristic = heuristics[0]
            row = {
                "family": "dpsgd final model (hidden state, one run)",
                "case": f"DP-SGD final model only (hidden state, Dirac gradient canaries), digits MLP, {name}, ε = {epsilon:g}",
                "truth": epsilon,
                "truth_how": "the accountant (an upper bound)",
                "default": {
                    "ratio": _summary([value / epsilon for value in bounds]),
                    "bound_over_heuristic": _summary([value / heuristic for value in bounds]),
                    "heuristic": heuristic,
                    "heuristic_test_over_heuristic": _summary([value / heuristic for value in tests if value is not None]),
                    "seconds_per_run": (time.perf_counter() - started) / len(seeds),
                    "runs": len(seeds),
                    "seeds": list(seeds),
                    "canaries": canaries,
                    "noise_multiplier": sigma,
                    "headline": f"{result.bound.method}: {result.bound.refuted or result.bound.family}",
                },
            }
            print(
                f"{row['case']}: bound ÷ ε mean {row['default']['ratio']['mean']:.3f}, ÷ heuristic {row['default']['bound_over_heuristic']['mean']:.3f}",
                flush=True,
            )
            rows.append(row)
    return rows


#: The mia rows' trainings: user-style ``--train`` functions of ``tests/own_models`` (non-private, each fits every label).
MIA_MODELS = {
    "overfitted torch MLP": "own_models.dp_mlp:train_overfit",
    "scikit-learn random forest (50 trees)": "own_models.forests:train_forest",
    "scikit-learn MLP (256 hidden, no weight decay)": "own_models.forests:train_mlp",
}


def mia_ceiling(num_canaries: int, *, delta: float, confidence: float) -> float:
    """The ceiling of m canaries: Steinke et al.'s test with every one of the m canaries guessed right, one test (no Bonferroni).

    No design with m canaries can show more at this δ and confidence, whatever
    its guess rule or attack. The mia bound modes test every canary once with
    a rule chosen on the references, so their own ceiling is this one.

    >>> round(mia_ceiling(300, delta=1e-5, confidence=0.95), 3)
    4.594
    """
    from privaudit.audits.mia.config import BOUND_METHODS
    from privaudit.stats.ceiling import one_run_ceiling

    return one_run_ceiling(num_canaries, delta=delta, confidence=confidence, methods=BOUND_METHODS, num_guesses=[num_canaries])


def mia_rows(seeds: int, canaries: int, only: str | None = None) -> list[dict]:
    """mia canary mode on non-private models of digits: the bound ÷ :func:`mia_ceiling`, and ÷ the design's own ceiling."""
    from privaudit.audits.mia.audit import run_mia_audit
    from privaudit.audits.mia.config import MIAConfig

    rows = []
    for name, train in MIA_MODELS.items():
        if only is not None and only.lower() not in name.lower():
            continue
        ratios, design_ratios, bounds, ceilings, attacks, started = [], [], [], [], [], time.perf_counter()
        for seed in range(seeds):
            config = MIAConfig(mode="canary", train=train, num_canaries=canaries, seed=seed)  # the default 8 references, as a user gets them
            with tempfile.TemporaryDirectory(prefix="tightness-mia-") as directory:
                result = run_mia_audit(config, directory, max_workers=1).result
            ceiling = mia_ceiling(canaries, delta=config.delta, confidence=config.confidence)
            bounds.append(result.bound.epsilon)
            ceilings.append(ceiling)
            attacks.append(result.bound_design.attack)
            ratios.append(result.bound.epsilon / ceiling)
            design_ratios.append(result.bound.epsilon / result.bound_design.ceiling if result.bound_design.ceiling > 0 else math.nan)
        row = {
            "family": "mia canary mode",
            "case": f"mia canary mode, {name} (digits, `--train {train}`), m = {canaries}: bound ÷ its ceiling",
            "truth": None,
            "truth_how": "no DP; the ratio is to the ceiling, the bound if all m canaries were guessed right in one test",
            "default": {
                "ratio": _summary(ratios),
                "design_ratio": _summary(design_ratios),
                "bounds": bounds,
                "ceilings": ceilings,
                "design_ceilings_held_out": [bound / ratio for bound, ratio in zip(bounds, design_ratios, strict=True)],
                "attacks": attacks,
                "seconds_per_run": (time.perf_counter() - started) / seeds,
            },
            "10x": {"not_measured": "the canary count is capped by the pool (digits)"},
        }
        print(
            f"{row['case']}: bound ÷ ceiling mean {row['default']['ratio']['mean']:.3f}, ÷ the design's ceiling {row['default']['design_ratio']['mean']:.3f}",
            flush=True,
        )
        rows.append(row)
    return rows


#: Annamalai and De Cristofaro (NeurIPS 2024, arXiv:2405.14106), Table/abstract: ε_emp = 7.21 at ε = 10, MNIST, 1,000 records, worst-case start.
PAPER_FINAL_MODEL = {10.0: 7.21 / 10.0}


def blackbox_init_rows(
    seeds: list[int],
    epsilons: tuple[float, ...],
    models_per_side: int,
    steps: int,
    learning_rate: float,
    workers: int | None,
    inits: tuple[str, ...] = ("average", "worst-case"),
) -> list[dict]:
    """DP-SGD final model only: the black-box audit's GDP bound ÷ the accountant's ε, from random weights and from the worst-case start, side by side.

    Every run of a row shares the training (digits, the first 1,000 train
    records, the built-in MLP, ``steps`` full-batch steps at ``learning_rate``,
    clip 1) and differs only in where it starts; σ is the accountant's for ε
    at sampling rate 1 and ``steps`` steps.
    """
    from privaudit.audits.blackbox.audit import run_blackbox_audit
    from privaudit.audits.blackbox.config import BlackBoxConfig

    rows = []
    for epsilon in epsilons:
        sigma = privaudit.gaussian_noise_multiplier(epsilon, 1e-5, sampling_prob=1.0, num_steps=steps)
        for init in inits:
            ratios, bounds, walls, digests = [], [], [], []
            for seed in seeds:
                config = BlackBoxConfig(
                    dataset="digits",
                    architecture="mlp",
                    num_records=1000,
                    noise_multiplier=sigma,
                    num_steps=steps,
                    learning_rate=learning_rate,
                    num_models_per_side=models_per_side,
                    init=init,
                    seed=seed,
                )
                with tempfile.TemporaryDirectory(prefix="tightness-blackbox-") as directory:
                    result = run_blackbox_audit(config, directory, max_workers=workers)
                bounds.append(result.epsilon_lower_bound)
                ratios.append(result.epsilon_lower_bound / epsilon)
                walls.append(result.wall_time_s)
                digests.append(None if result.initialisation is None else result.initialisation.digest)
            paper = PAPER_FINAL_MODEL.get(epsilon) if init == "worst-case" else None
            row = {
                "family": "dpsgd final model (black box)",
                "case": (
                    f"DP-SGD final model only (black box, `--init {init}`), digits 1,000 records, MLP, {steps} full-batch steps, "
                    f"{2 * models_per_side} training runs, ε = {epsilon:g}" + (f" (Annamalai and De Cristofaro, MNIST: {paper:.2f})" if paper else "")
                ),
                "truth": epsilon,
                "truth_how": "the accountant (an upper bound)",
                "default": {
                    "ratio": _summary(ratios),
                    "bounds": bounds,
                    "init": init,
                    "training_runs": 2 * models_per_side,
                    "wall_time_s": walls,
                    "seconds_per_run": statistics.mean(walls),  # the table's column: seconds per audit of all its training runs
                    "workers": workers,
                    "init_digests": digests,
                    "noise_multiplier": sigma,
                    "learning_rate": learning_rate,
                    "paper_ratio": paper,
                    "seeds": list(seeds),
                },
                "10x": {"not_measured": "one budget (≤ 400 training runs)"},
            }
            print(f"{row['case']}: bound ÷ ε mean {statistics.fmean(ratios):.3f}, {statistics.mean(walls):.0f} s per audit", flush=True)
            rows.append(row)
    return rows


_THEN = "then `python benchmarks/tightness.py --only lm --update`"


@dataclasses.dataclass(frozen=True)
class LMSource:
    """Where an Opacus LM row comes from: its threat model, setting, the JSON files the benchmark writes, and the command that writes them."""

    threat: str
    setting: str
    patterns: tuple[str, ...]
    command: str
    user_canaries: bool = False  # the files of opacus_verdict_lm.py --black-box, whose config holds "black_box" (never read as the white box's)
    full: bool = False  # the files of opacus_verdict_lm.py --full (every weight trained), whose config holds "full": true
    learning_rate: float | None = None  # the row's learning rate: files whose config records another (lm_dp.py's before 10⁻³) are not its


LM_SOURCES = (
    LMSource(
        "black box",
        "tiny GPT-2, full-batch DP-Adam at learning rate 10⁻³, 2000 new-token canaries with prefixes of their own",
        ("lm_dp.json", "lm_dp_eps*.json"),
        "run `python benchmarks/lm_dp.py --epsilon {epsilon:g} --no-baseline --seeds 0 --append --output benchmarks/results/lm_dp_eps{epsilon:g}.json` "
        "(then `--seeds 1`, `--seeds 2`: one seed per command), " + _THEN,
        learning_rate=1e-3,
    ),
    LMSource(
        "white box",
        "user loop, tiny GPT-2 + LoRA",
        ("opacus_verdict_lm*.json", "*lm*whitebox*.json", "*lm*white_box*.json"),
        "run `python benchmarks/opacus_verdict_lm.py --seeds 3 --epsilon {epsilon:g} --output benchmarks/results/opacus_verdict_lm_eps{epsilon:g}.json`, "
        + _THEN,
    ),
    LMSource(
        "black box",
        "user loop, tiny GPT-2 + LoRA",
        ("lm_userloop_blackbox_eps*.json",),
        "run `python benchmarks/opacus_verdict_lm.py --black-box --epsilon {epsilon:g} --seeds 1 --start 0 --append "
        "--output benchmarks/results/lm_userloop_blackbox_eps{epsilon:g}.json` (then `--start 1`, `--start 2`: one seed per command), " + _THEN,
        user_canaries=True,
    ),
    LMSource(
        "black box",
        "user loop, tiny GPT-2, every weight trained, 500 new-token canaries with prefixes of their own, 2 copies",
        ("lm_userloop_full_blackbox_eps*.json",),
        "run `python benchmarks/opacus_verdict_lm.py --black-box --full --design new-tokens --canaries 500 --copies 2 --epsilon {epsilon:g} --seeds 1 --start 0 "
        "--append --output benchmarks/results/lm_userloop_full_blackbox_eps{epsilon:g}.json` (then `--start 1`, `--start 2`: one seed per command), " + _THEN,
        user_canaries=True,
        full=True,
    ),
)


def _lm_values(data: dict, key: str) -> list[float] | None:
    """``key`` of each run of an LM benchmark's JSON (``runs[*].dp.KEY`` or ``runs[*].KEY``): ``bound_over_claimed``, ``seconds``."""
    values = []
    for run in data.get("runs", []):
        inner = run.get("dp", run) if isinstance(run, dict) else {}
        value = inner.get(key) if isinstance(inner, dict) else None
        if isinstance(value, (int, float)):
            values.append(float(value))
    return values or None


def _lm_ratios(data: dict) -> list[float] | None:
    """Bound ÷ claimed ε of each run of an LM benchmark's JSON."""
    return _lm_values(data, "bound_over_claimed")


def lm_rows(results: Path) -> list[dict]:
    rows = []
    for epsilon in (4.0, 8.0):
        for source in LM_SOURCES:
            found = None
            for pattern in source.patterns:
                for path in sorted(results.glob(pattern)):
                    try:
                        data = json.loads(path.read_text())
                    except (OSError, ValueError):
                        continue
                    config = data.get("config") or {}
                    if ("black_box" in config) != source.user_canaries or bool(config.get("full", False)) != source.full:
                        continue
                    if source.learning_rate is not None and config.get("learning_rate") != source.learning_rate:
                        continue
                    claimed = config.get("epsilon")
                    if claimed is not None and abs(float(claimed) - epsilon) < 1e-9 and _lm_ratios(data):
                        found = (path, _lm_ratios(data), _lm_values(data, "seconds"))
            row: dict[str, Any] = {
                "family": f"Opacus LM fine-tune, {source.threat}",
                "case": f"Opacus LM fine-tune ({source.setting}), {source.threat}, ε = {epsilon:g}",
                "truth": epsilon,
                "truth_how": "the accountant (an upper bound)",
            }
            if found is None:
                row["default"] = {"not_measured": source.command.format(epsilon=epsilon)}
            else:
                row["default"] = {"ratio": _summary(found[1]), "source": str(found[0])}
                if found[2]:
                    row["default"]["seconds_per_run"] = statistics.mean(found[2])
            row["10x"] = {"not_measured": "the LM benchmarks run one budget"}
            rows.append(row)
    return rows


def dpmm_rows(seeds: int, case: str | None = None) -> list[dict]:
    """dpmm's MST and AIM on fair (bound ÷ claim), MST without noise or run above its claim and a copying generator (bound ÷ ceiling), as benchmarks/tightness_dpmm.py runs them."""
    import tightness_dpmm as dpmm  # benchmarks/: the script's own folder is on sys.path

    rows = []
    for model, epsilon, claimed in dpmm.CASES:
        name = dpmm.case_name(model, epsilon, claimed)
        if case is not None and case.lower() not in name.lower():
            continue
        measured = dpmm.run_case(model, epsilon, claimed, seeds)
        correct = measured["ratio_to"] == "the claim"
        row: dict[str, Any] = {
            "family": "dpmm synthetic data",
            "case": name,
            "truth": epsilon if correct else None,
            "truth_how": "the claim (an upper bound)" if correct else "no DP at the claim; the ratio is to the ceiling",
            "default": measured | {"ratio": _summary(measured["ratio"])},
            "10x": {"not_measured": f"one canary budget (m = {dpmm.CANARIES}, about the empty one-way cells of the declared domain)"},
        }
        print(f"{name}: {_cell(row['default'])}", flush=True)
        rows.append(row)
    return rows


def _cell(entry: dict) -> str:
    if "ratio" not in entry:
        return "not measured"
    ratio = entry["ratio"]
    rejected = f", {entry['rejected']}/{entry['runs']} rejected" if "rejected" in entry else ""
    design = f"; ÷ the design's own ceiling {entry['design_ratio']['mean']:.2f}" if "design_ratio" in entry else ""
    positive = f", positive in {entry['positive']}/{entry['runs']} seeds" if "positive" in entry else ""
    runs = f"; {entry['runs']} seeds" if "runs" in entry and "seconds_per_run" in entry else ""
    if "bound_over_heuristic" in entry:  # the final-model rows: beside the last-iterate heuristic (a heuristic, not a bound)
        runs += f"; ÷ heuristic ε {entry['heuristic']:.3g}: {_ratio_text(entry['bound_over_heuristic']['mean'])}"  # the dpmm rows, whose seed count varies
    return f"{_ratio_text(ratio['mean'])} (min {_ratio_text(ratio['min'])}{rejected}{positive}{runs}{design})"


def _ratio_text(value: float) -> str:
    """Two decimals, three below 0.1 (a bound of 0.005 of the claim is not 0.00)."""
    return f"{value:.3f}" if 0 < abs(value) < 0.1 else f"{value:.2f}"


def table(rows: list[dict]) -> str:
    lines = [
        "| case | true ε (how known) | default budget: bound ÷ truth, mean (min) | 10× budget | s per run (default / 10×) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        truth = "∞" if row["truth"] is None else f"{row['truth']:.3g}"
        entries = [row.get(label, {}) for label in ("default", "10x")]
        seconds = [entry.get("seconds_per_audit", entry.get("seconds_per_run")) for entry in entries]
        timing = " / ".join("–" if value is None else f"{value:.2f}" for value in seconds)
        lines.append(f"| {row['case']} | {truth} ({row['truth_how']}) | {_cell(entries[0])} | {_cell(entries[1])} | {timing} |")
    notes = [f"- {row['case']}: not measured; {row['default']['not_measured']}" for row in rows if "not_measured" in row.get("default", {})]
    return "\n".join(lines + ([""] + notes if notes else []))


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per mechanism row (DP-SGD and mia: --heavy-seeds)")
    parser.add_argument("--heavy-seeds", type=int, default=2, help="training runs per DP-SGD ε and for the mia row")
    parser.add_argument("--quick", action="store_true", help="two seeds, the default budget only, mechanisms only")
    parser.add_argument(
        "--only", default="mechanisms,dpsgd,mia,lm", help="comma-separated families: mechanisms, dpsgd, mia, lm, final-model, dpmm (its own environment)"
    )
    parser.add_argument("--final-model-canaries", type=int, default=5000, help="final-model rows: gradient canaries per run")
    parser.add_argument("--budgets", default="default,10x", help="comma-separated: default, 10x (the mechanism rows)")
    parser.add_argument("--case", default=None, help="only the mechanism, mia and dpmm rows whose name contains this text")
    parser.add_argument("--dpmm-seeds", type=int, default=None, help="seeds per dpmm row (default: --heavy-seeds)")
    parser.add_argument("--epsilons", default="1,4,8", help="DP-SGD rows: the claimed ε, comma-separated")
    parser.add_argument("--dpsgd-canaries", type=int, default=None, help="DP-SGD rows: white-box canaries per run (default: the one-run audit's 1,000)")
    parser.add_argument("--final-model-runs", type=int, default=200, help="final-model rows: training runs per audit (half with the canary; <= 400)")
    parser.add_argument("--final-model-inits", default="average,worst-case", help="final-model rows: the starts, comma-separated")
    parser.add_argument("--final-model-steps", type=int, default=2, help="final-model rows: full-batch DP-SGD steps per training run")
    parser.add_argument("--final-model-lr", type=float, default=0.5, help="final-model rows: DP-SGD learning rate (on the mean gradient)")
    parser.add_argument("--final-model-epsilons", default="10,4", help="final-model rows: the claimed ε, comma-separated")
    parser.add_argument("--workers", type=int, default=2, help="final-model rows: worker processes")
    parser.add_argument("--seed", type=int, default=None, help="final-model rows: run this one seed only (default: seeds 0 .. --heavy-seeds - 1)")
    parser.add_argument("--update", action="store_true", help="keep the rows of --output that this run does not measure")
    parser.add_argument("--output", type=Path, default=RESULTS / "tightness.json")
    args = parser.parse_args(argv)
    budgets = {"default": DEFAULT_BUDGET, "10x": TEN_TIMES}
    chosen = args.budgets.split(",")
    if not chosen or not set(chosen) <= set(budgets):
        parser.error(f"--budgets must name default and/or 10x, got {args.budgets!r}")
    try:
        epsilons = tuple(float(part) for part in args.epsilons.split(","))
    except ValueError:
        parser.error(f"--epsilons must be comma-separated numbers, got {args.epsilons!r}")
    families = set(args.only.split(","))
    if not families <= {"mechanisms", "dpsgd", "mia", "lm", "final-model", "dpmm"}:
        parser.error(f"--only must name mechanisms, dpsgd, mia, lm, final-model or dpmm, got {args.only!r}")
    if not 10 <= args.final_model_runs <= 400 or args.final_model_runs % 2:
        parser.error(f"--final-model-runs must be an even number in [10, 400], got {args.final_model_runs}")
    try:
        final_epsilons = tuple(float(part) for part in args.final_model_epsilons.split(","))
    except ValueError:
        parser.error(f"--final-model-epsilons must be comma-separated numbers, got {args.final_model_epsilons!r}")
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    if args.final_model_canaries < 4:
        parser.error(f"--final-model-canaries must be at least 4, got {args.final_model_canaries}")
    if args.seeds < 1 or args.heavy_seeds < 1 or (args.dpmm_seeds is not None and args.dpmm_seeds < 1):
        parser.error(f"--seeds, --heavy-seeds and --dpmm-seeds must be >= 1, got {args.seeds}, {args.heavy_seeds} and {args.dpmm_seeds}")
    if args.dpsgd_canaries is not None and args.dpsgd_canaries < 4:
        parser.error(f"--dpsgd-canaries must be at least 4, got {args.dpsgd_canaries}")
    seeds = 2 if args.quick else args.seeds
    started = time.perf_counter()
    rows: list[dict] = []
    if "mechanisms" in families:
        rows += mechanism_rows(seeds, {"default": DEFAULT_BUDGET} if args.quick else {label: budgets[label] for label in chosen}, args.case)
    if "dpsgd" in families and not args.quick:
        rows += dpsgd_rows(args.heavy_seeds, epsilons, args.dpsgd_canaries)
    if "final-model" in families and not args.quick:
        final_seeds = (args.seed,) if args.seed is not None else tuple(range(args.heavy_seeds))
        rows += final_model_rows(final_seeds, epsilons, args.final_model_canaries)
    if "mia" in families and not args.quick:
        rows += mia_rows(args.heavy_seeds, 300, args.case)
    if "final-model" in families and not args.quick:
        seed_list = list(range(args.heavy_seeds)) if args.seed is None else [args.seed]
        inits = tuple(args.final_model_inits.split(","))
        if not set(inits) <= {"average", "worst-case"}:
            parser.error(f"--final-model-inits must name average and/or worst-case, got {args.final_model_inits!r}")
        rows += blackbox_init_rows(seed_list, final_epsilons, args.final_model_runs // 2, args.final_model_steps, args.final_model_lr, args.workers, inits)
    if "dpmm" in families and not args.quick:
        rows += dpmm_rows(args.heavy_seeds if args.dpmm_seeds is None else args.dpmm_seeds, args.case)
    if "lm" in families:
        rows += lm_rows(RESULTS)
    if args.update and args.output.is_file():  # rows measured by earlier runs, merged budget by budget
        earlier = {row["case"]: row for row in json.loads(args.output.read_text(encoding="utf-8"))["rows"]}
        for row in rows:  # an earlier row keeps its place in the table
            kept = earlier.get(row["case"], {})
            row.update({label: kept[label] for label in ("default", "10x") if label in kept and label not in row})
            earlier[row["case"]] = row
        rows = list(earlier.values())
    order = [case.name for case in mechanism_cases()]
    families = ["mechanism", "dpsgd white", "dpsgd final", "mia", "dpmm", "Opacus"]
    rows.sort(
        key=lambda row: (
            order.index(row["case"]) if row["case"] in order else len(order),
            next(i for i, name in enumerate(families) if row["family"].startswith(name)),
            row["truth"] or 0.0,
        )
    )
    report = {
        "benchmark": "tightness",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "seeds": seeds,
        "budgets": {"default": DEFAULT_BUDGET, "10x": TEN_TIMES},
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": library_versions(),
        "wall_time_s": time.perf_counter() - started,
        "rows": rows,
        "table": table(rows),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, default=float) + "\n", encoding="utf-8")
    print(report["table"])
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
