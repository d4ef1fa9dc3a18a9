"""Mechanism audit: speed, 20-seed acceptance of the reference mechanisms, and real libraries: ``python benchmarks/mechanism.py [--output FILE] [--seeds N]``.

* ``speed``: the vectorised Laplace mechanism's samples per second, and the
  wall time to a verdict for Laplace at ε = 1 with half the scale (a 2×
  bug) against a budget of 10⁴ samples (DP-Auditorium's example budget):
  2 sides × (2,000 pilot + 3,000 held-out), the audit's tests included; and
  the same in sequential mode (4 looks), with the samples drawn until the
  rejection; and the default audit (``privaudit audit mechanism`` with no
  options: the Laplace example, the default search and budget) with the
  learned statistics and with the fixed ones only;
* ``acceptance``: each reference mechanism of ``tests/mechanisms_reference.py``,
  buggy and correct, on ``--seeds`` seeds (default 20) at that budget, with
  how often each is rejected at 95% and the range of its ε lower bounds;
* ``libraries``: each library adapter that imports here
  (:mod:`privaudit.integrations.dp_libraries`), at the library's own claim,
  with the ε lower bound reached as a fraction of the claim.

Run from the repository root with PYTHONPATH=src. Writes
benchmarks/results/mechanism.json (or ``--output``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from results_io import write_results
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

import privaudit
from privaudit._core.results import library_versions
from privaudit.audits.mechanism.audit import audit_mechanism
from privaudit.mechanisms.examples import DEFAULT_DATASET, laplace_sum

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mechanisms_reference import REFERENCES, laplace  # noqa: E402

BUDGET = {"samples": 3000, "pilot_samples": 2000}  # 2 x (2000 + 3000) = 10^4 samples


def _speed(repeats: int = 5) -> dict:
    reference = REFERENCES["laplace"]
    mechanism = laplace(True)
    rng = np.random.default_rng(0)
    mechanism(reference.dataset, 10, rng)  # warm-up
    start = time.perf_counter()
    drawn = 0
    for _ in range(repeats):
        drawn += mechanism(reference.dataset, 10**6, rng).size
    per_second = drawn / (time.perf_counter() - start)
    times, verdicts = [], []
    for seed in range(repeats):
        start = time.perf_counter()
        result = audit_mechanism(mechanism, reference.dataset, reference.neighbour, epsilon=1.0, seed=seed, **BUDGET)
        times.append(time.perf_counter() - start)
        verdicts.append(result.verdict)
    sequential_times, sequential_samples = [], []
    for seed in range(repeats):
        start = time.perf_counter()
        result_sequential = audit_mechanism(mechanism, reference.dataset, reference.neighbour, epsilon=1.0, seed=seed, stages=4, **BUDGET)
        sequential_times.append(time.perf_counter() - start)
        sequential_samples.append(result_sequential.total_samples if result_sequential.rejected else None)
    default_times: dict[str, list[float]] = {"learned": [], "fixed only": []}
    for seed in range(repeats):
        for label, learned in (("learned", True), ("fixed only", False)):
            start = time.perf_counter()
            audit_mechanism(laplace_sum, DEFAULT_DATASET, epsilon=1.0, seed=seed, learned=learned)
            default_times[label].append(time.perf_counter() - start)
    return {
        "default_audit_with_search_seconds_median": {label: float(np.median(values)) for label, values in default_times.items()},
        "sequential_4_looks_time_to_verdict_seconds_median": float(np.median(sequential_times)),
        "sequential_4_looks_samples_to_rejection": sequential_samples,
        "laplace_samples_per_second": per_second,
        "time_to_verdict_seconds_median": float(np.median(times)),
        "time_to_verdict_seconds_min": float(np.min(times)),
        "budget_samples": result.total_samples,
        "verdicts": verdicts,
    }


def _acceptance(seeds: int) -> dict:
    rows = {}
    for name, reference in REFERENCES.items():
        for label, argument in (("buggy", reference.buggy), ("correct", reference.correct)):
            start = time.perf_counter()
            results = [
                audit_mechanism(reference.make(argument), reference.dataset, reference.neighbour, seed=seed, **BUDGET, **reference.claim)
                for seed in range(seeds)
            ]
            bounds = [result.epsilon for result in results]
            rows[f"{name}/{label}"] = {
                "rejected": sum(result.rejected for result in results),
                "runs": seeds,
                "epsilon_min": min(bounds),
                "epsilon_max": max(bounds),
                "claim": results[0].claim,
                "seconds_per_run": (time.perf_counter() - start) / seeds,
            }
    return rows


def _libraries() -> dict:
    from privaudit.integrations import dp_libraries as lib

    makers = {
        "opendp laplace (scale 1)": (lambda: lib.opendp_laplace_sum(scale=1.0), {"samples": 1000, "pilot_samples": 500}),
        "python-dp laplace (eps 1)": (lambda: lib.pydp_laplace_sum(epsilon=1.0), BUDGET),
        "diffprivlib laplace (eps 1)": (lambda: lib.diffprivlib_laplace_sum(epsilon=1.0), BUDGET),
        "diffprivlib gaussian (eps 1, delta 1e-5)": (lambda: lib.diffprivlib_gaussian_sum(epsilon=1.0, delta=1e-5), BUDGET),
        "diffprivlib mean (eps 1, bounds [0, 1])": (lambda: lib.diffprivlib_mean(epsilon=1.0), {"samples": 1000, "pilot_samples": 500}),
    }
    dataset = np.linspace(0.0, 1.0, 10)
    rows = {}
    for name, (make, budget) in makers.items():
        try:
            mechanism = make()
        except ImportError as error:
            rows[name] = {"skipped": str(error).splitlines()[0]}
            continue
        neighbour = np.append(dataset, 1.0) if mechanism.neighbouring == "add-remove" else np.append(dataset[:-1], 0.0)
        start = time.perf_counter()
        result = audit_mechanism(mechanism, dataset, neighbour, seed=0, **budget, **mechanism.claim)
        rows[name] = {
            "claim": result.claim,
            "epsilon_lower_bound": result.epsilon,
            "fraction_of_claim": result.fraction_of_claim,
            "verdict": result.verdict,
            "samples": result.total_samples,
            "seconds": time.perf_counter() - start,
        }
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/mechanism.json"))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--only", choices=("speed", "acceptance", "libraries"), default=None)
    args = parser.parse_args(argv)
    if args.seeds < 1:
        print(f"error: `--seeds` must be >= 1, got {args.seeds}", file=sys.stderr)
        return 2
    report = {
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version()},
        "versions": library_versions(),
        "privaudit": privaudit.__version__,
        "budget": BUDGET,
    }
    if args.only in (None, "speed"):
        report["speed"] = _speed()
    if args.only in (None, "acceptance"):
        report["acceptance"] = _acceptance(args.seeds)
    if args.only in (None, "libraries"):
        report["libraries"] = _libraries()
    write_results(report, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
