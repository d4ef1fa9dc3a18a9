"""Wall time of a full PANORAMIA tabular audit on CPU, by phase: ``python benchmarks/panoramia.py [--seeds 0 1 2]``.

Runs the embedded default (``configs/panoramia.json``: statsmodels' ``fair``,
a 1-hidden-layer MLP trained for 5 epochs, a 4-hidden-layer MLP trained for
300 epochs and a DP-SGD target at ε = 2, MST generator) once per seed, and records for each target c_lb (with its
generator), {c+ε}_lb, ε̃, RM;RN and O(1), the accuracies, and the wall time of
every phase (the first run's generator fit includes JAX's compilation).
Also ``--config configs/panoramia_digits.json`` for the image variant.

Prints JSON and writes it to benchmarks/results/panoramia[_<name>].json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
import warnings
from pathlib import Path

from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions, to_plain
from privaudit.audits.panoramia import AUDIT, PanoramiaDemoConfig

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "panoramia.json")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    base = PanoramiaDemoConfig.from_json(args.config)
    runs = []
    for seed in args.seeds:
        started = time.perf_counter()
        result = AUDIT.run(dataclasses.replace(base, seed=seed)).result
        total = time.perf_counter() - started
        phases = {}
        for entry in result.targets.values():
            for phase, seconds in entry.timings_s.items():
                phases[phase] = phases.get(phase, 0.0) + seconds
        runs.append(
            {
                "seed": seed,
                "wall_time_s": round(total, 2),
                "phases_s": {phase: round(seconds, 3) for phase, seconds in phases.items()},
                "summary": to_plain(result.summary_rows()),
                "accuracy": {name: {"train": e.train_accuracy, "test": e.test_accuracy} for name, e in result.targets.items()},
            }
        )
        print(json.dumps(runs[-1]), flush=True)
    out = {
        "benchmark": "panoramia",
        "config": str(args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config),
        "cpu": _cpu_name(),
        "cores_note": "timings on a shared 2-core machine are noisy",
        "runs": runs,
        "versions": {**library_versions(), "torch": __import__("torch").__version__, "python": platform.python_version()},
    }
    text = json.dumps(out, indent=2)
    print(text)
    name = "panoramia" if args.config.name == "panoramia.json" else args.config.stem
    target = args.output or ROOT / "benchmarks" / "results" / f"{name}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text + "\n")


if __name__ == "__main__":
    main()
