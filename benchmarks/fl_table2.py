"""One-shot Table 2: ``python benchmarks/fl_table2.py [--runs 50] [--dimension 1000000] [--num-canaries 1000]``.

Runs Algorithm 1 (:func:`privaudit.audits.fl.gaussian_mechanism.audit_gaussian_mechanism`)
``--runs`` times (seeds 0, 1, ...) for each σ of One-shot Table 2 (4.22, 1.54,
0.541; δ = 10⁻⁶) and reports, per σ, the mean and standard deviation of
ε_est (Table 2's equal-variance reading and Algorithm 1's fitted σ̂), of ε_lo,
the share of Anderson–Darling rejections, and whether the mean ε_est lies
within the paper's standard deviation of the analytical ε (1, 3, 10).

The full reproduction is the default (3 σ × 50 runs at d = 10⁶, k = 10³);
``--runs 5 --dimension 100000`` is a reduced version. ``--method vectors``
(the default) runs the mechanism on d-dimensional canary vectors in chunks;
``--method exact-law`` draws the same cosines from their exact Wishart law,
which takes about a second per run at d = 10⁶. Results are written after
every run, so an interrupted reproduction still reports what was run.
Prints JSON and writes benchmarks/results/fl_table2.json (or ``--output``).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit.audits.fl.gaussian_mechanism import audit_gaussian_mechanism

# One-shot Table 2: σ, analytical ε, reported mean ± std of ε_est over 50 runs.
PAPER = [(4.22, 1.0, 0.972, 0.148), (1.54, 3.0, 3.04, 0.137), (0.541, 10.0, 9.98, 0.190)]
DELTA = 1e-6


def _summary(sigma, epsilon, paper_mean, paper_std, audits, seconds):
    equal = np.array([a.estimate_equal_variance.epsilon for a in audits])
    fitted = np.array([a.estimate.epsilon for a in audits])
    lower = np.array([a.lower_bound.epsilon for a in audits])
    return {
        "noise_multiplier": sigma,
        "paper_epsilon": epsilon,
        "analytical_epsilon": audits[0].analytical_epsilon,
        "paper_estimate": {"mean": paper_mean, "std": paper_std},
        "runs": len(audits),
        "estimate_equal_variance": {"mean": float(equal.mean()), "std": float(equal.std(ddof=1)) if equal.size > 1 else None},
        "estimate_fitted_variance": {"mean": float(fitted.mean()), "std": float(fitted.std(ddof=1)) if fitted.size > 1 else None},
        "lower_bound_jeffreys_95": {"mean": float(lower.mean()), "min": float(lower.min()), "max": float(lower.max())},
        "within_paper_std": bool(abs(equal.mean() - epsilon) <= paper_std),
        "within_paper_std_fitted": bool(abs(fitted.mean() - epsilon) <= paper_std),
        "anderson_darling_rejections_5pct": int(sum(a.gaussianity.rejected for a in audits)),
        "seconds_per_run": seconds / len(audits),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--dimension", type=int, default=10**6)
    parser.add_argument("--num-canaries", type=int, default=1000)
    parser.add_argument("--memory-budget-mb", type=int, default=256, help="canary rows held at once (MiB)")
    parser.add_argument("--method", choices=["vectors", "exact-law"], default="vectors")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "fl_table2.json")
    args = parser.parse_args()
    report = {
        "benchmark": "One-shot Table 2 (Gaussian mechanism, Algorithm 1)",
        "command": f"python benchmarks/fl_table2.py --runs {args.runs} --dimension {args.dimension} --num-canaries {args.num_canaries} --memory-budget-mb {args.memory_budget_mb} --method {args.method}",
        "method": args.method,
        "dimension": args.dimension,
        "num_canaries": args.num_canaries,
        "delta": DELTA,
        "machine": {"cpu": _cpu_name(), "platform": platform.platform()},
        "versions": library_versions(),
        "rows": [],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    audits = {sigma: [] for sigma, *_ in PAPER}
    seconds = {sigma: 0.0 for sigma, *_ in PAPER}
    for seed in range(args.runs):  # seeds outermost, so an interrupted run still covers every σ
        for sigma, *_ in PAPER:
            started = time.perf_counter()
            audits[sigma].append(
                audit_gaussian_mechanism(
                    sigma,
                    num_canaries=args.num_canaries,
                    dimension=args.dimension,
                    delta=DELTA,
                    seed=seed,
                    memory_budget_bytes=args.memory_budget_mb * 2**20,
                    method=args.method,
                )
            )
            seconds[sigma] += time.perf_counter() - started
        report["rows"] = [_summary(sigma, eps, mean, std, audits[sigma], seconds[sigma]) for sigma, eps, mean, std in PAPER]
        args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
