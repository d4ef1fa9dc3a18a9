"""The proxy gap on a real table: ``python benchmarks/synthetic_data.py [--seeds 0,1,2] [--shadows 0] [--generators copula,memorising,near-copy] [--table breast-cancer] [--sdv]``.

The table is scikit-learn's breast-cancer data (569 records, 30 numeric
columns, the diagnosis as a categorical string), or with ``--table
diabetes`` its diabetes data (442 records, 9 numeric columns and sex as a
categorical string, unscaled), both shipped inside scikit-learn, never
downloaded. Each seed splits the table in halves (training
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

Per generator and attack (the robust DCR, the headline; DOMIAS by
nearest neighbours and by KDEs; DCR-as-a-score; the shadow attack with
``--shadows`` > 0): TPR at 1% FPR and AUC, and for the copying generators
how many of the copied records are above the 1% FPR threshold; DCR's
holdout test and baseline (privaudit's and sdmetrics' when installed).
Summaries over the seeds: each attack's mean TPR on each generator and its
ratio to the same attack's on the clean copula, and each attack's
per-seed difference from DCR-as-a-score on the same release (mean and
standard error). Output: ``benchmarks/results/synthetic_data.json``.

The headline was chosen once, on pilot seeds 100-139 (``--seeds $(seq -s,
100 139)``); the figures in the guide use seeds 0-39 (``--seeds $(seq -s, 0
39)``), which no choice saw.

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
from privaudit.audits.synthetic_data import AUDIT, HEADLINE_ATTACK, SyntheticDataConfig
from privaudit.audits.synthetic_data.generators import MEMORISED_SHARE, most_outlying

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


TABLES = ("breast-cancer", "diabetes")


def tables(seed: int, folder: Path, table: str = "breast-cancer") -> tuple[Path, Path]:
    """``table`` split in halves by ``seed``, written as CSV with an id and its categorical column as strings."""
    from privaudit.data.tabular import mixed_table

    frame = mixed_table(table)
    order = np.random.default_rng(seed).permutation(len(frame))
    half = len(frame) // 2
    paths = folder / f"train-{seed}.csv", folder / f"holdout-{seed}.csv"
    frame.iloc[np.sort(order[:half])].to_csv(paths[0], index=False)
    frame.iloc[np.sort(order[half:])].to_csv(paths[1], index=False)
    return paths


def copies_found(run, train: Path) -> dict:
    """Per attack, how many of the copying generators' copied records (the most outlying training rows) score above the 1% FPR threshold.

    The threshold is the one :func:`privaudit.stats.metrics.tpr_at_fpr` reads
    TPR at 1% FPR from: a member counts when its score is above the
    (floor(0.01 n) + 1)-th highest non-member score (ties never split).
    """
    import pandas as pd

    frame = pd.read_csv(train).drop(columns=["record"])
    copied = np.zeros(len(frame), dtype=bool)
    copied[most_outlying(frame, max(1, int(round(MEMORISED_SHARE * len(frame)))))] = True
    out = {}
    for attack, (scores, member) in run.observations["curves"].items():
        if attack == "shadow":
            continue  # scored on its targets only
        outside = np.sort(scores[~member])[::-1]
        threshold = outside[int(np.floor(0.01 * len(outside)))]
        above = scores[member] > threshold
        assert np.isclose(above.mean(), run.result.attack(attack).tpr_at(0.01)), attack  # the same reading as the result's
        out[f"{attack}_copies_found_at_1pct_fpr"] = int(above[copied].sum())
    out["copies"] = int(copied.sum())
    return out


def bootstrap_ratios(runs: dict[str, list[dict]], attack: str, clean_name: str = "copula", resamples: int = 2000) -> dict:
    """A 95% percentile bootstrap interval of each generator's mean TPR at 1% FPR over the clean generator's, the seeds resampled in pairs (seeded)."""
    key = f"{attack}_tpr_at_1pct_fpr"
    clean = np.array([e[key] for e in runs.get(clean_name, [])])
    if not clean.size:
        return {}
    rng = np.random.default_rng(0)
    draws = rng.integers(0, len(clean), size=(resamples, len(clean)))
    out = {}
    for name, entries in runs.items():
        values = np.array([e[key] for e in entries])
        if name == clean_name or len(values) != len(clean):
            continue
        denominators = clean[draws].mean(axis=1)
        ratio = values[draws].mean(axis=1)[denominators > 0] / denominators[denominators > 0]
        out[name] = [float(np.quantile(ratio, 0.025)), float(np.quantile(ratio, 0.975))]
    return out


def paired_difference(entries: list[dict], attacks: list[str]) -> dict:
    """Each attack's TPR at 1% FPR minus DCR-as-a-score's on the same release, seed by seed: mean and standard error."""
    out = {}
    for attack in attacks:
        pairs = [e[f"{attack}_tpr_at_1pct_fpr"] - e["dcr_tpr_at_1pct_fpr"] for e in entries if e.get(f"{attack}_tpr_at_1pct_fpr") is not None]
        if pairs:
            out[attack] = {"mean": float(np.mean(pairs)), "standard_error": float(np.std(pairs, ddof=1) / np.sqrt(len(pairs))) if len(pairs) > 1 else None}
    return out


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
    parser.add_argument("--table", default="breast-cancer", choices=TABLES)
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
            train, holdout = tables(seed, Path(scratch), args.table)
            for name in names:
                config = SyntheticDataConfig(
                    train=str(train), holdout=str(holdout), generator=GENERATORS[name], id_col="record", num_shadows=args.shadows, seed=seed
                )
                started = time.perf_counter()
                run = AUDIT.run(config)
                result = run.result
                entry = {
                    "seed": seed,
                    "seconds": time.perf_counter() - started,
                    **{f"{a.attack}_tpr_at_1pct_fpr": a.tpr_at(0.01) for a in result.attacks},
                    **{f"{a.attack}_auc": a.auc for a in result.attacks},
                    **(copies_found(run, train) if name in ("memorising", "near-copy") else {}),
                    "dcr_overfitting_protection": result.dcr.overfitting_protection,
                    "dcr_baseline_protection": result.dcr.baseline_protection,
                    "dcr_passes": result.dcr.passes,
                    "sdmetrics_overfitting_protection": result.dcr.sdmetrics_overfitting_protection,
                    "sdmetrics_baseline_protection": result.dcr.sdmetrics_baseline_protection,
                }
                runs[name].append(entry)
                print(name, json.dumps(entry))
    keys = sorted({k for entries in runs.values() for e in entries for k, v in e.items() if k not in ("seed", "dcr_passes") and v is not None})
    means = {
        name: {k: float(np.mean([e[k] for e in entries if e.get(k) is not None])) for k in keys if all(e.get(k) is not None for e in entries)}
        for name, entries in runs.items()
    }
    attacks = [k.removesuffix("_tpr_at_1pct_fpr") for k in keys if k.endswith("_tpr_at_1pct_fpr")]
    clean_name = "sdv-copula" if "sdv-copula" in names else "copula"
    ratios = {attack: {name: _ratio(m, means.get(clean_name, {}), f"{attack}_tpr_at_1pct_fpr") for name, m in means.items()} for attack in attacks}
    command = "python benchmarks/synthetic_data.py --sdv" if args.sdv else f"python benchmarks/synthetic_data.py --generators {args.generators}"
    report = {
        "command": f"{command} --seeds {args.seeds} --shadows {args.shadows} --table {args.table}",
        "table": f"scikit-learn {args.table}, halves by seed (train / holdout)",
        "headline": HEADLINE_ATTACK,
        "clean_generator": clean_name,
        "sdv_ctgan_epochs": _ctgan_epochs() if "sdv-ctgan" in names else None,
        "runs": runs,
        "means": means,
        "headline_ratio_to_clean": ratios.get(HEADLINE_ATTACK, {}),
        "ratio_to_clean": ratios,
        "ratio_to_clean_bootstrap_95": {attack: bootstrap_ratios(runs, attack, clean_name) for attack in attacks},
        "difference_from_dcr_score": {name: paired_difference(entries, attacks) for name, entries in runs.items()},
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
        "versions": {**library_versions(), **_table_library_versions()},
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({key: report[key] for key in ("means", "headline_ratio_to_clean", "ratio_to_clean", "difference_from_dcr_score")}, indent=2))


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
