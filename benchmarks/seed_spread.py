"""Spread over seeds of the demo's estimates that move with the seed or the CPU: ``python benchmarks/seed_spread.py [--seeds 0 1 2 3 4]``.

PANORAMIA's ε̃ and one-shot FL's ε estimate are point estimates from trained
models: the seed (the data split, the initial weights, the generator) and the
CPU (float32 summation order in training) move them. The demo's seed-0
PANORAMIA headline is ε̃ 1.020 on an AMD EPYC and 0.802 on an Intel Xeon.
This runs each family exactly as ``privaudit demo --seed S`` does (its
registered demo config, its child seed of ``S``) for every root seed ``S``,
and records each headline with its median, minimum and maximum over the
seeds, which the README quotes.

Prints JSON and writes it to ``benchmarks/results/seed_spread.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
import warnings
from pathlib import Path

from results_io import write_results  # benchmarks/results_io.py: the script's own folder is on sys.path
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit._core.seeding import child_seeds
from privaudit.audits.registry import get_audit
from privaudit.demo_full import DEMO_AUDITS

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("panoramia", "fl")


def headline_of(family: str, root_seed: int) -> dict:
    """The headline ``privaudit demo --seed root_seed`` reports for ``family``, with its child seed and wall time."""
    audit, (demo_run,) = get_audit(family), DEMO_AUDITS[family].runs
    seed = child_seeds(root_seed, DEMO_AUDITS)[family]
    started = time.perf_counter()
    headline = audit.run(demo_run.configure(audit.default_config(), seed)).result.headline()
    return {
        "root_seed": root_seed,
        "child_seed": seed,
        "value": headline.value,
        "label": headline.label,
        "wall_time_s": round(time.perf_counter() - started, 1),
    }


def spread(values: list[float]) -> dict:
    """Median, minimum and maximum of ``values``.

    >>> spread([1.0, 0.5, 2.0])
    {'median': 1.0, 'min': 0.5, 'max': 2.0, 'seeds': 3}
    """
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "seeds": len(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "seed_spread.json")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    families = {}
    for family in args.families:
        runs = []
        for seed in args.seeds:
            runs.append(headline_of(family, seed))
            print(json.dumps({"family": family, **runs[-1]}), flush=True)
        families[family] = {"label": runs[0]["label"], "spread": spread([run["value"] for run in runs]), "runs": runs}
    out = {
        "benchmark": "seed_spread",
        "command": "privaudit demo --seed S, one family at a time",
        "cpu": _cpu_name(),
        "families": families,
        "versions": {**library_versions(), "torch": __import__("torch").__version__, "python": platform.python_version()},
    }
    write_results(out, args.output)


if __name__ == "__main__":
    main()
