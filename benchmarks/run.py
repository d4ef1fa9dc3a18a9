"""Benchmarks of the statistical core: ``python benchmarks/run.py [--output FILE] [--repeats N]``.

Each case is timed ``repeats`` times after one warm-up call; the JSON holds
the median and minimum wall-clock seconds, the machine, and library versions.
Inputs are generated from fixed seeds, so runs are comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import privaudit
from privaudit._core.results import library_versions

DELTA = 1e-5


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cases():
    rng = np.random.default_rng(0)
    references = rng.normal(0.0, 1.0, 1_000_000)
    canaries = rng.normal(-2.0, 1.0, 1_000)
    in_scores, out_scores = rng.normal(1.0, 1.0, 1_000_000), rng.normal(0.0, 1.0, 1_000_000)
    small_in, small_out = in_scores[:10_000], out_scores[:10_000]
    return {
        "exposure: 1e3 canaries vs 1e6 references": lambda: privaudit.exposure(canaries, references),
        "exposure, skew-normal extrapolation: 1e3 canaries vs 1e6 references": lambda: privaudit.exposure_extrapolated(canaries, references),
        "GDP bound, Clopper-Pearson, split: 1e6 observations per side": lambda: privaudit.epsilon_lower_bound(in_scores, out_scores, delta=DELTA, seed=0),
        "(eps, delta) bound, Clopper-Pearson, split: 1e6 observations per side": lambda: privaudit.epsilon_lower_bound(
            in_scores, out_scores, delta=DELTA, method="eps-delta", threshold="split", seed=0
        ),
        "GDP bound, fixed threshold: 1e6 observations per side": lambda: privaudit.epsilon_lower_bound(in_scores, out_scores, delta=DELTA, threshold=0.5),
        "one Bayesian interval (GDP, fixed threshold, 1e4 per side)": lambda: privaudit.epsilon_lower_bound(
            small_in, small_out, delta=DELTA, interval="bayes", threshold=0.5
        ),
        "one Bayesian interval ((eps, delta), fixed threshold, 1e4 per side)": lambda: privaudit.epsilon_lower_bound(
            small_in, small_out, delta=DELTA, method="eps-delta", interval="bayes", threshold=0.5
        ),
        "PLD bound, subsampled Gaussian q=0.01, T=1000, fixed threshold": lambda: privaudit.epsilon_lower_bound(
            small_in, small_out, delta=DELTA, method=privaudit.SubsampledGaussian(0.01, 1000), threshold=0.5
        ),
        "one-run bound: m = 1e5 canaries": lambda: privaudit.epsilon_one_run(100_000, 10_000, 7_000, delta=DELTA),
        "epsilon between two Gaussians": lambda: privaudit.epsilon_two_gaussians(0.0, 1.0, 1.0, 1.2, delta=DELTA),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "benchmarks.json")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    results = []
    for name, call in _cases().items():
        call()  # warm-up: imports, caches
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - start)
        results.append({"case": name, "median_s": statistics.median(seconds), "min_s": min(seconds), "repeats": args.repeats})
        print(f"{statistics.median(seconds):9.4f} s  {name}", flush=True)

    report = {
        "machine": {
            "cpu": _cpu_name(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
        },
        "versions": library_versions(),
        "results": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
