"""End-to-end ε lower bound of DP-SGD from one training run, ÷ the claimed ε: ``python benchmarks/one_run_dpsgd.py [--seeds N] [--canaries M] [--steps T] [--sampling-rate Q]``.

The one-run audit (``privaudit audit one-run``, :mod:`privaudit.audits.one_run`)
on its embedded default (the digits MLP, the reference DP-SGD, full batch
unless ``--sampling-rate`` says otherwise), with the noise multiplier
calibrated so that the whole run claims ε ∈ {1, 4, 8} at δ = 1e-5
(:func:`privaudit.gaussian_noise_multiplier`). White-box gradient canaries,
each included with probability ½ for the whole run, sampled as examples
are. For each seed, one training run, and each method's lower bound ÷ ε:
Steinke et al., f-DP against GDP, f-DP against the subsampled Gaussian
(with ``--sampling-rate`` < 1), the Gaussian method, and the headline
(``one_run_lower_bound`` over the methods fixed in advance, Bonferroni).

For comparison, the per-step audit's end-to-end figure on the same σ: the
GDP / Clopper–Pearson per-step bound from T steps of 100 fresh canaries
among 1,000 slots per step (the canary coordinates of the reference DP-SGD
are the Gaussian mechanism, simulated here without the model), composed
over the run (Tight Auditing §5.5). That figure is an *estimate*, not a bound.

Writes benchmarks/results/one_run_dpsgd.json (or ``--output``). Bad
arguments: one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

import privaudit
from privaudit._core.results import library_versions, to_plain
from privaudit.audits.one_run.audit import AUDIT, run_one_run_audit
from privaudit.canaries.gradient import GradientCanary
from privaudit.observation.gradient import collect_gradient_observations
from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.pld import step_to_end_epsilon

DELTA = 1e-5
EPSILONS = (1.0, 4.0, 8.0)


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr, exit status 2."""

    def error(self, message: str):  # noqa: D102 - argparse hook
        self.exit(2, f"{self.prog}: error: {message}\n")


def per_step_estimate(sigma: float, *, num_steps: int, sampling_rate: float, seed: int) -> float:
    """The per-step audit's end-to-end ε estimate: per-step GDP / Clopper–Pearson bound at threshold 0.5, composed over the run."""
    rng = np.random.default_rng([seed, 99])

    def release(rows):
        clipped = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
        return clipped.sum(axis=0) + rng.normal(0.0, sigma, rows.shape[1])

    observations = collect_gradient_observations(
        release, num_steps=num_steps, canaries_per_step=100, num_slots=1000, clip_norm=1.0, canary=GradientCanary(slot_size=1), seed=seed
    )
    step = epsilon_lower_bound(observations.in_scores, observations.out_scores, delta=DELTA, method="gdp", threshold=0.5).epsilon
    return float(step_to_end_epsilon(step, delta=DELTA, num_steps=num_steps, sampling_prob=sampling_rate).epsilon)


def _summary(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "values": values}


def main() -> None:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="training runs per ε (seeds 0, 1, ...)")
    parser.add_argument("--canaries", type=int, default=1000, help="m, the canaries of each run")
    parser.add_argument("--steps", type=int, default=None, help="DP-SGD steps of each run (default: the embedded default's)")
    parser.add_argument("--sampling-rate", type=float, default=None, help="Poisson sampling rate (default: the embedded default's)")
    parser.add_argument("--epsilons", type=str, default=",".join(f"{e:g}" for e in EPSILONS), help="claimed ε of the whole run, comma-separated")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "one_run_dpsgd.json")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    try:
        epsilons = tuple(float(part) for part in args.epsilons.split(","))
    except ValueError:
        parser.error(f"--epsilons must be comma-separated numbers, got {args.epsilons!r}")
    if any(not 0.0 < epsilon < 100.0 for epsilon in epsilons):
        parser.error(f"--epsilons must lie in (0, 100), got {args.epsilons!r}")
    base = AUDIT.default_config()
    try:
        base = dataclasses.replace(
            base,
            num_canaries=args.canaries,
            num_steps=base.num_steps if args.steps is None else args.steps,
            sampling_rate=base.sampling_rate if args.sampling_rate is None else args.sampling_rate,
        )
    except ValueError as error:
        parser.error(" ".join(str(error).split()))

    started = time.perf_counter()
    rows = []
    for epsilon in epsilons:
        sigma = privaudit.gaussian_noise_multiplier(epsilon, DELTA, sampling_prob=base.sampling_rate, num_steps=base.num_steps)
        runs = []
        for seed in range(args.seeds):
            config = dataclasses.replace(base, noise_multiplier=sigma, delta=DELTA, seed=seed)
            start = time.perf_counter()
            result = run_one_run_audit(config)
            seconds = time.perf_counter() - start
            ratios = {name: bound.epsilon / epsilon for name, bound in result.side_by_side().items()}
            ratios["per_step_estimate"] = per_step_estimate(sigma, num_steps=base.num_steps, sampling_rate=base.sampling_rate, seed=seed) / epsilon
            runs.append({"seed": seed, "ratios": ratios, "headline_method": result.bound.method, "claimed_epsilon": result.claimed_epsilon, "seconds": seconds})
            print(f"ε={epsilon:g} seed={seed}: " + ", ".join(f"{name} {ratio:.3f}" for name, ratio in ratios.items()) + f" ({seconds:.0f} s)", flush=True)
        methods = list(runs[0]["ratios"])
        rows.append(
            {
                "epsilon": epsilon,
                "noise_multiplier": sigma,
                "ratio": {name: _summary([run["ratios"][name] for run in runs]) for name in methods},
                "runs": runs,
            }
        )

    report = {
        "command": " ".join([sys.executable, *sys.argv]),
        "delta": DELTA,
        "confidence": base.confidence,
        "settings": {
            "dataset": base.dataset,
            "architecture": base.architecture,
            "num_canaries": base.num_canaries,
            "num_steps": base.num_steps,
            "sampling_rate": base.sampling_rate,
            "canary_rate": base.effective_canary_rate,
            "inclusion_prob": base.inclusion_prob,
            "seeds": args.seeds,
            "per_step_estimate": "per-step GDP/Clopper-Pearson bound (100 canaries of 1000 slots per step, Gaussian mechanism), composed: an estimate",
        },
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": library_versions(),
        "wall_time_s": time.perf_counter() - started,
        "rows": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(to_plain(report), indent=2) + "\n")
    print("bound ÷ ε, mean over seeds (min–max):")
    for row in rows:
        print(
            f"  ε={row['epsilon']:g} σ={row['noise_multiplier']:.4g}: "
            + ", ".join(f"{name} {s['mean']:.3f} ({s['min']:.3f}–{s['max']:.3f})" for name, s in row["ratio"].items())
        )
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
