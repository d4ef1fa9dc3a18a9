"""The mia audit's canary-mode ε lower bound on a DP-SGD target (Opacus, ε = 1) and a non-DP overfitted MLP: ``python benchmarks/mia_bounds.py [--seeds 0,1,2] [--canaries 100,300,500] [--references 4] [--workers 1]``.

For each trainer, canary count m and seed, :func:`privaudit.audits.mia.audit.run_mia_audit`
runs ``mode="canary"`` on digits: m mislabeled canaries, each in the one
target run by a fair coin, ``--references`` calibration models, the attack
and its guess rule chosen on the references (each scored as a target by the
others) and Steinke et al.'s one-run bound on all m canaries at δ = 1e-5 and
95% confidence, with its ceiling (the bound a perfect attack gets on them). The
trainers are the user-style functions of the acceptance test
(``tests/own_models/dp_mlp.py``: ``train_dp`` at ε = 1 by Opacus' RDP
accountant, ``train_overfit`` without DP), passed as ``--train`` paths
exactly as a user's are. ``--leave-one-out`` adds the leave-one-out game
with the overfitted MLP (``--trial-models`` trial models). The bound, the
AUC of online RMIA with its null standard error, and the wall time go to
``benchmarks/results/mia_bounds.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the acceptance test's training functions (own_models)

from privaudit._core.results import library_versions  # noqa: E402
from privaudit.audits.mia.audit import run_mia_audit  # noqa: E402
from privaudit.audits.mia.config import MIAConfig

TRAINERS = {"dp-sgd (Opacus, ε = 1)": "own_models.dp_mlp:train_dp", "overfitted MLP (no DP)": "own_models.dp_mlp:train_overfit"}


def one(config: MIAConfig, workers: int | None) -> dict:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mia-bounds-") as directory:
        result = run_mia_audit(config, directory, max_workers=workers).result
    wall = time.perf_counter() - start
    rmia = result.attack("rmia-online")
    num_in, num_out = result.num_members, result.num_records - result.num_members
    best = max(result.bound.candidates, key=lambda item: item[3])
    return {
        "mode": config.mode,
        "seed": config.seed,
        "slots": result.num_records,
        "epsilon_lower_bound": result.bound.epsilon,
        # the attack and rule chosen on the references, the slots it is bounded on, and the bound a perfect attack gets there
        "bound_attack": None if result.bound_design is None else result.bound_design.attack,
        "rule": None if result.bound_design is None else [result.bound_design.low, result.bound_design.high],
        "bounded_slots": result.bound.num_canaries,
        "ceiling": None if result.bound_design is None else result.bound_design.ceiling,
        "guesses": best[1],
        "correct": best[2],
        "auc": rmia.auc,
        "auc_null_se": math.sqrt((num_in + num_out + 1) / (12 * num_in * num_out)),
        "tpr_at_1pct_fpr": rmia.tpr[rmia.fpr.index(0.01)],
        "models": len(result.seeds),
        "wall_time_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--canaries", default="100,300,500")
    parser.add_argument("--references", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--leave-one-out", action="store_true", help="also the leave-one-out game with the overfitted MLP")
    parser.add_argument("--trial-models", type=int, default=2)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "mia_bounds.json")
    args = parser.parse_args()
    seeds = [int(part) for part in args.seeds.split(",")]
    counts = [int(part) for part in args.canaries.split(",")]
    rows = []
    for trainer, path in TRAINERS.items():
        for m in counts:
            for seed in seeds:
                config = MIAConfig(mode="canary", train=path, num_canaries=m, num_references=args.references, seed=seed)
                rows.append({"trainer": trainer, "canaries": m, **one(config, args.workers)})
                print(json.dumps(rows[-1]), flush=True)
    if args.leave_one_out:
        for seed in seeds:
            config = MIAConfig(
                mode="leave-one-out", train=TRAINERS["overfitted MLP (no DP)"], num_trial_models=args.trial_models, num_references=args.references, seed=seed
            )
            rows.append({"trainer": "overfitted MLP (no DP)", "canaries": None, **one(config, args.workers)})
            print(json.dumps(rows[-1]), flush=True)
    summary = {}
    for row in rows:
        key = f"{row['trainer']} | {row['mode']} | m = {row['slots'] if row['canaries'] is None else row['canaries']}"
        summary.setdefault(key, []).append(row)
    means = {
        key: {
            metric: sum(row[metric] for row in group) / len(group) for metric in ("epsilon_lower_bound", "auc", "auc_null_se", "tpr_at_1pct_fpr", "wall_time_s")
        }
        | {"max_epsilon_lower_bound": max(row["epsilon_lower_bound"] for row in group), "seeds": len(group)}
        for key, group in summary.items()
    }
    report = {
        "benchmark": "mia_bounds",
        "dataset": "digits (1797 records; 40% population samples z)",
        "bound": "one-run (Steinke et al.), online RMIA scores, δ = 1e-5, 95% confidence, Bonferroni over 10 guess counts",
        "trainers": TRAINERS,
        "references": args.references,
        "seeds": seeds,
        "mean": means,
        "runs": rows,
        "machine": {"platform": platform.platform(), "cpu": _cpu_name(), "python": platform.python_version()},
        "versions": library_versions(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(means, indent=2))


if __name__ == "__main__":
    main()
