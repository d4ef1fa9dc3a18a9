"""The proxy gap on a real table: ``python benchmarks/synthetic_data.py [--seeds 0,1,2] [--shadows 0] [--generators copula,memorising,near-copy] [--sdv]``.

The table is scikit-learn's breast-cancer data (569 records, 30 numeric
columns, the diagnosis as a categorical string), shipped inside
scikit-learn, never downloaded. Each seed splits it in halves (training
table, holdout) and runs ``privaudit audit synthetic-data`` on each
generator with the same seed:

* ``copula``: the built-in Gaussian copula (clean);
* ``memorising``: its output with 5% of rows exact copies of the most
  outlying training records;
* ``near-copy``: the same with noise on every numeric column and one
  category changed;
* ``sdv-copula``, ``sdv-ctgan``: SDV's GaussianCopula and CTGAN (its
  adapter's default epochs) through privaudit's adapters, when SDV is
  installed (the ``sdv`` extra, in its own environment);
* ``sdv-memorising``, ``sdv-near-copy``: SDV's GaussianCopula output with
  5% of rows copies (near-copies) of the most outlying training records.

``--sdv`` runs the four SDV generators (:data:`SDV_GENERATORS`) and writes
``benchmarks/results/synthetic_data_sdv.json``. The ratios to the clean
generator are to SDV's GaussianCopula where it was run, else to the
built-in copula.

Per generator: DOMIAS' (the headline) and DCR-as-a-score's TPR at 1% FPR
and AUC, the shadow attack's with ``--shadows`` > 0, DCR's holdout test
and baseline (privaudit's and sdmetrics' when installed), averaged over the
seeds, and the ratio of each generator's headline TPR to the clean one's.
Output: ``benchmarks/results/synthetic_data.json``.

``--throughput local,ray`` instead times the shadow generations of the
embedded default (``--shadows`` per target, 4 targets) on each runner
backend, from a fresh checkpoint folder, and writes
``benchmarks/results/synthetic_data_throughput.json`` (generations per second).
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from privaudit._core.results import library_versions
from privaudit.audits.synthetic_data import AUDIT, SyntheticDataConfig

GENERATORS = {
    "copula": "privaudit.audits.synthetic_data.generators:gaussian_copula",
    "memorising": "privaudit.audits.synthetic_data.generators:memorising_copula",
    "near-copy": "privaudit.audits.synthetic_data.generators:near_copy_copula",
    "sdv-copula": "privaudit.audits.synthetic_data.sdv_generators:gaussian_copula",
    "sdv-ctgan": "privaudit.audits.synthetic_data.sdv_generators:ctgan",
    "sdv-memorising": "privaudit.audits.synthetic_data.sdv_generators:memorising_gaussian_copula",
    "sdv-near-copy": "privaudit.audits.synthetic_data.sdv_generators:near_copy_gaussian_copula",
}
SDV_GENERATORS = "sdv-copula,sdv-ctgan,sdv-memorising,sdv-near-copy"


def tables(seed: int, folder: Path) -> tuple[Path, Path]:
    """breast-cancer split in halves by ``seed``, written as CSV with an id and the diagnosis as a string."""
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    frame["target"] = frame["target"].map({0: "malignant", 1: "benign"})
    frame.insert(0, "record", [f"bc-{i:03d}" for i in range(len(frame))])
    order = np.random.default_rng(seed).permutation(len(frame))
    half = len(frame) // 2
    paths = folder / f"train-{seed}.csv", folder / f"holdout-{seed}.csv"
    frame.iloc[np.sort(order[:half])].to_csv(paths[0], index=False)
    frame.iloc[np.sort(order[half:])].to_csv(paths[1], index=False)
    return paths


def throughput(backends: list[str], shadows: int, workers: int | None) -> dict:
    """Shadow generations per second of the embedded default on each backend (the release and the probe excluded)."""
    out = {}
    for backend in backends:
        config = SyntheticDataConfig(num_shadows=shadows, num_shadow_targets=4)
        with tempfile.TemporaryDirectory() as scratch:
            started = time.perf_counter()
            AUDIT.run(config, checkpoints=Path(scratch), backend=backend, max_workers=workers)
            seconds = time.perf_counter() - started
        out[backend] = {"generations": 4 * shadows, "seconds": seconds, "per_second": 4 * shadows / seconds, "workers": workers}
        print(backend, json.dumps(out[backend]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--shadows", type=int, default=0)
    parser.add_argument("--generators", default="copula,memorising,near-copy")
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "synthetic_data.json"))
    parser.add_argument("--throughput", default=None, help="comma-separated backends (local, ray): time the shadow generations instead")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--sdv", action="store_true", help=f"the SDV generators ({SDV_GENERATORS}), written to results/synthetic_data_sdv.json")
    args = parser.parse_args()
    if args.sdv:
        args.generators = SDV_GENERATORS
        if args.output == parser.get_default("output"):
            args.output = str(Path(__file__).parent / "results" / "synthetic_data_sdv.json")
    if args.throughput:
        result = {
            "command": f"python benchmarks/synthetic_data.py --throughput {args.throughput} --shadows {args.shadows} --workers {args.workers}",
            "backends": throughput(args.throughput.split(","), max(args.shadows, 4), args.workers),
            "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
        }
        path = Path(__file__).parent / "results" / "synthetic_data_throughput.json"
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        return
    seeds = [int(s) for s in args.seeds.split(",")]
    names = args.generators.split(",")
    runs: dict[str, list[dict]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as scratch:
        for seed in seeds:
            train, holdout = tables(seed, Path(scratch))
            for name in names:
                config = SyntheticDataConfig(
                    train=str(train), holdout=str(holdout), generator=GENERATORS[name], id_col="record", num_shadows=args.shadows, seed=seed
                )
                started = time.perf_counter()
                result = AUDIT.run(config).result
                entry = {
                    "seed": seed,
                    "seconds": time.perf_counter() - started,
                    **{f"{a.attack}_tpr_at_1pct_fpr": a.tpr_at(0.01) for a in result.attacks},
                    **{f"{a.attack}_auc": a.auc for a in result.attacks},
                    "dcr_overfitting_protection": result.dcr.overfitting_protection,
                    "dcr_baseline_protection": result.dcr.baseline_protection,
                    "dcr_passes": result.dcr.passes,
                    "sdmetrics_overfitting_protection": result.dcr.sdmetrics_overfitting_protection,
                    "sdmetrics_baseline_protection": result.dcr.sdmetrics_baseline_protection,
                }
                runs[name].append(entry)
                print(name, json.dumps(entry))
    keys = [k for k in runs[names[0]][0] if k not in ("seed", "dcr_passes") and runs[names[0]][0][k] is not None]
    means = {
        name: {k: float(np.mean([e[k] for e in entries if e.get(k) is not None])) for k in keys if all(k in e for e in entries)}
        for name, entries in runs.items()
    }
    clean_name = "sdv-copula" if "sdv-copula" in names else "copula"
    ratios = {
        attack: {name: _ratio(m, means.get(clean_name, {}), f"{attack}_tpr_at_1pct_fpr") for name, m in means.items()}
        for attack in ("domias", "dcr", "domias-kde", "shadow")
        if f"{attack}_tpr_at_1pct_fpr" in means[names[0]]
    }
    command = "python benchmarks/synthetic_data.py --sdv" if args.sdv else f"python benchmarks/synthetic_data.py --generators {args.generators}"
    report = {
        "command": f"{command} --seeds {args.seeds} --shadows {args.shadows}",
        "table": "scikit-learn breast-cancer, halves by seed (train / holdout)",
        "clean_generator": clean_name,
        "sdv_ctgan_epochs": _ctgan_epochs() if "sdv-ctgan" in names else None,
        "runs": runs,
        "means": means,
        "tpr_at_1pct_fpr_ratio_to_clean": ratios,
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
        "versions": {**library_versions(), **_table_library_versions()},
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"means": means, "tpr_at_1pct_fpr_ratio_to_clean": ratios}, indent=2))


def _ratio(means: dict, clean: dict, key: str) -> float | None:
    """A generator's mean TPR at 1% FPR over the clean generator's (None where the clean one's is 0 or absent)."""
    return means[key] / clean[key] if clean.get(key) else None


def _table_library_versions() -> dict:
    """The installed versions of the table libraries the figures rest on (absent ones left out)."""
    from importlib import metadata

    out = {}
    for name in ("pandas", "scikit-learn", "sdv", "sdmetrics", "ctgan", "rdt", "copulas", "torch"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _ctgan_epochs() -> int:
    from privaudit.audits.synthetic_data.sdv_generators import CTGAN_EPOCHS

    return CTGAN_EPOCHS


if __name__ == "__main__":
    main()
