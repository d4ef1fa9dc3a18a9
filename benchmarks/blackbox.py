"""Black-box DP-SGD audit throughput: ``python benchmarks/blackbox.py [--models-per-side N] [--backend local|ray] [--workers K]``.

Runs :func:`privaudit.audits.blackbox.audit.run_blackbox_audit` (breast-cancer,
linear model, noise multiplier 0.5, 20 full-batch steps, mislabeled canary)
into a fresh temporary directory and merges models per minute, the ε bounds,
the wall time and the machine into ``benchmarks/results/blackbox.json``
(one entry per backend, so local and Ray runs sit side by side).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit.audits.blackbox.audit import run_blackbox_audit
from privaudit.audits.blackbox.config import BlackBoxConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-per-side", type=int, default=500)
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--noise-multiplier", type=float, default=0.5)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "blackbox.json")
    args = parser.parse_args()

    config = BlackBoxConfig(noise_multiplier=args.noise_multiplier, num_models_per_side=args.models_per_side)
    with tempfile.TemporaryDirectory(prefix="blackbox-") as directory:
        result = run_blackbox_audit(config, directory, backend=args.backend, max_workers=args.workers)
    entry = {
        "backend": args.backend,
        "workers": args.workers or os.cpu_count(),
        "models": 2 * args.models_per_side,
        "wall_time_s": result.wall_time_s,
        "models_per_minute": result.models_per_minute,
        "epsilon_lower_bound_gdp": result.epsilon_lower_bound,
        "epsilon_lower_bound_eps_delta": result.epsilon_lower_bound_eps_delta,
        "claimed_epsilon": result.claimed_epsilon,
        "mean_in_score": result.mean_in_score,
        "mean_out_score": result.mean_out_score,
        "config": result.to_dict()["config"],
    }
    print(
        f"{args.backend}: {entry['models']} models in {result.wall_time_s:.1f} s "
        f"({result.models_per_minute:.0f} models/min); eps >= {result.epsilon_lower_bound:.3f} (GDP), "
        f"{result.epsilon_lower_bound_eps_delta:.3f} (eps-delta); claimed {result.claimed_epsilon:.2f}",
        flush=True,
    )

    report = {"results": {}}
    if args.output.exists():
        try:
            report = json.loads(args.output.read_text())
        except ValueError:
            pass
    report.setdefault("results", {})[args.backend] = entry
    report["machine"] = {"cpu": _cpu_name(), "cores": os.cpu_count(), "platform": platform.platform()}
    report["versions"] = library_versions()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
