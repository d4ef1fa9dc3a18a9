"""LOSS, LiRA and RMIA on digits with a user-style --train MLP: ``python benchmarks/mia.py [--seeds 0,1,2] [--references 16] [--workers K] [--population-fraction 0.1]``.

For each seed, :func:`privaudit.audits.mia.audit.run_mia_audit` trains the target
and ``--references`` reference models (each record IN exactly half of them)
with :func:`train_mlp` below, passed as ``--train mia:train_mlp`` exactly as
a user's function is. The attacks are then rerun on the stored signals with
k of the references per record (k/2 IN and k/2 OUT for online attacks, k OUT
for offline ones, the first in index order), for k = 2, 4, ... The TPR at 1%
FPR and the AUC of each attack on the target's records go to
``benchmarks/results/mia.json``, per seed and averaged, with the seconds
each attack takes to score ``--score-records`` synthetic records with 64
references (and a tenth as many population samples), in memory, and all five
attacks streamed from the run store's on-disk ``.npy`` cache (as the audit
reads them) with their time, tracemalloc peak and resident-set growth.
``--scoring-only`` measures the scoring alone (one quick command).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit.audits.mia.audit import run_mia_audit
from privaudit.audits.mia.config import MIAConfig
from privaudit.audits.mia.result import attack_scores
from privaudit.audits.mia.training import draws
from privaudit.runner import RunStore
from privaudit.stats.mia import lira_offline_scores, lira_online_scores, loss_scores, rmia_log_ratios, rmia_scores
from privaudit.stats.mia_metrics import attack_metrics
from privaudit.stats.mia_stream import DEFAULT_CHUNK_RECORDS, working_bytes


def train_mlp(x_train, y_train, *, seed):
    """What a user's training function looks like: scikit-learn's MLP, no weight decay, 200 epochs (overfits digits)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return MLPClassifier(hidden_layer_sizes=(64,), alpha=0.0, max_iter=200, tol=1e-6, random_state=seed).fit(x_train, y_train)


def _select(signals, membership, k, online):
    """Per record, k reference signals: k/2 IN then k/2 OUT (online), or k OUT (offline); and their membership."""
    picks = []
    for column in membership.T:
        ins, outs = np.flatnonzero(column), np.flatnonzero(~column)
        picks.append(np.r_[ins[: k // 2], outs[: k // 2]] if online else outs[:k])
    rows = np.array(picks).T  # (k, n)
    chosen = np.take_along_axis(signals, rows, axis=0)
    return chosen, np.take_along_axis(membership, rows, axis=0)


def attacks_with(k, target, reference, membership, population, is_member, config):
    """TPR at 1% FPR and AUC of each attack using k references per record."""
    x, z = ~population, population
    out = {}

    def record(name, scores):
        metrics = attack_metrics(scores, is_member, fpr=0.01)
        out[name] = {"tpr_at_1pct_fpr": float(metrics.tpr[0]), "auc": metrics.auc}

    if k <= membership.shape[0] // 2:  # offline: k models that were all trained without the record
        off, off_member = _select(reference, membership, k, online=False)
        record("lira-offline", lira_offline_scores(target[x], off[:, x], off_member[:, x], global_variance=True))
        # RMIA ranked by its log ratio, as the audit ranks it (the fraction of z with every tie broken); the fraction alone beside it
        record("rmia-offline", rmia_log_ratios(target[x], off[:, x], off_member[:, x], offline_a=config.offline_a))
        record(
            "rmia-offline-fraction",
            rmia_scores(target[x], off[:, x], off_member[:, x], target[z], off[:, z], off_member[:, z], offline_a=config.offline_a, gamma=config.gamma),
        )
    if k <= membership.shape[0]:  # online: k models, half of them trained with the record
        on, on_member = _select(reference, membership, k, online=True)
        if k >= 4:  # a pooled variance needs 2 per side somewhere, a per-record one 2 per side everywhere
            record("lira-online", lira_online_scores(target[x], on[:, x], on_member[:, x], global_variance=True))
            record("lira-online-per-record", lira_online_scores(target[x], on[:, x], on_member[:, x], global_variance=False))
        record("rmia-online", rmia_log_ratios(target[x], on[:, x], on_member[:, x]))
        record("rmia-online-fraction", rmia_scores(target[x], on[:, x], on_member[:, x], target[z], on[:, z], on_member[:, z], gamma=config.gamma))
    return out


def scoring_time(num_records, num_references, num_population, seed=0):
    """Seconds each attack takes on synthetic signals of ``num_records`` records and ``num_references`` references."""
    rng = np.random.default_rng(seed)
    membership = np.argsort(rng.random((num_records, num_references)), axis=1).T < num_references // 2
    reference = rng.normal(size=(num_references, num_records)) + membership
    target = rng.normal(size=num_records)
    z = slice(0, num_population)
    calls = {
        "lira-online": lambda: lira_online_scores(target, reference, membership),
        "lira-offline": lambda: lira_offline_scores(target, reference, membership),
        "rmia-online": lambda: rmia_scores(target, reference, membership, target[z], reference[:, z], membership[:, z]),
        "rmia-offline": lambda: rmia_scores(target, reference, membership, target[z], reference[:, z], membership[:, z], offline_a=0.3),
    }
    seconds = {}
    for name, call in calls.items():
        start = time.perf_counter()
        call()
        seconds[name] = time.perf_counter() - start
    return seconds


def streamed_scoring(num_records, num_references, num_population, seed=0):
    """All five attacks of the audit on signals streamed from a run store's .npy files: seconds, tracemalloc peak, RSS growth.

    The pool holds ``num_records`` scored records and ``num_population``
    population samples; each model's signals are written as the audit's jobs
    write them (one .npy per model, generated one at a time), then read back
    memory-mapped and scored in chunks of DEFAULT_CHUNK_RECORDS records.
    """
    rng = np.random.default_rng(seed)
    total = num_records + num_population
    # each record IN half the references, drawn a block of records at a time (no (n, k) float array)
    blocks = [np.argsort(rng.random((size, num_references)), axis=1).T < num_references // 2 for size in np.diff(np.r_[0:total:8192, total])]
    membership = np.concatenate(blocks, axis=1)
    population = np.zeros(total, dtype=bool)
    population[rng.choice(total, size=num_population, replace=False)] = True
    config = MIAConfig(num_references=num_references)
    with tempfile.TemporaryDirectory(prefix="mia-cache-") as directory:
        store = RunStore(directory)
        for index in range(num_references + 1):  # the references, then the target
            shift = membership[index] if index < num_references else 0.5
            store.save(index, {"signals": rng.normal(size=total) + shift})
        rows = [store.load(index)["signals"] for index in range(num_references + 1)]
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tracemalloc.start()
        start = time.perf_counter()
        scores = attack_scores(np.asarray(rows[-1]), rows[:-1], membership, population, config)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
        cache_bytes = sum(path.stat().st_size for path in store.directory.glob("*.npy"))
    assert all(values.shape == (total,) for values in scores.values())  # every record, the population samples too
    return {
        "records": num_records,
        "population": num_population,
        "references": num_references,
        "attacks": sorted(scores),
        "chunk_records": DEFAULT_CHUNK_RECORDS,
        "seconds_all_attacks": seconds,
        "tracemalloc_peak_mib": peak / 2**20,
        "stated_working_budget_mib": working_bytes(num_references, DEFAULT_CHUNK_RECORDS) / 2**20,
        "membership_mib": membership.nbytes / 2**20,
        "max_rss_growth_mib": rss_growth / 2**10,  # Linux reports KiB; memory-mapped pages read count as resident
        "cache_mib": cache_bytes / 2**20,
    }


def orderings(by_references):
    """The papers' orderings checked on the mean TPR at 1% FPR and AUC: RMIA offline vs LiRA offline at 2 and 4
    references; online vs offline (LiRA, RMIA) at 16 and 32, offline with as many OUT models (when trained) and
    with the OUT half of the same models."""

    def value(k, name, metric):
        return by_references.get(str(k), {}).get(name, {}).get(metric)

    def compare(claim, first, second):
        row = {"claim": claim}
        for metric in ("tpr_at_1pct_fpr", "auc"):
            a, b = value(*first, metric), value(*second, metric)
            row[metric] = {f"{first[1]}@{first[0]}": a, f"{second[1]}@{second[0]}": b, "holds": None if a is None or b is None else a >= b}
        return row

    rows = [compare("RMIA offline >= LiRA offline", (k, "rmia-offline"), (k, "lira-offline")) for k in (2, 4)]
    for k in (16, 32):
        for family in ("lira", "rmia"):
            rows.append(compare(f"{family} online >= offline, {k} models each", (k, f"{family}-online"), (k, f"{family}-offline")))
            rows.append(compare(f"{family} online >= offline, the same {k} models", (k, f"{family}-online"), (k // 2, f"{family}-offline")))
    return [row for row in rows if any(None not in metric.values() for key, metric in row.items() if key != "claim")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--references", type=int, default=16)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--population-fraction", type=float, default=0.4, help="share of the pool kept as RMIA's population samples z")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "mia.json")
    parser.add_argument("--score-records", type=int, default=100_000, help="records of the scoring-time measurement (64 references)")
    parser.add_argument("--scoring-only", action="store_true", help="measure the scoring alone (no training); writes results/mia_scoring.json")
    args = parser.parse_args()
    streamed = streamed_scoring(args.score_records, 64, args.score_records // 10)  # first: the RSS high-water mark is still low
    print(json.dumps({"streamed_scoring": streamed}), flush=True)
    scoring = {"records": args.score_records, "references": 64, "population": args.score_records // 10}
    scoring["seconds"] = scoring_time(args.score_records, 64, args.score_records // 10)
    print(json.dumps({"scoring": scoring}), flush=True)
    machine = {"platform": platform.platform(), "cpu": _cpu_name(), "python": platform.python_version()}
    if args.scoring_only:
        output = args.output.with_name("mia_scoring.json")
        output.parent.mkdir(parents=True, exist_ok=True)
        report = {"benchmark": "mia scoring", "streamed": streamed, "in_memory": scoring, "machine": machine, "versions": library_versions()}
        output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        return
    seeds = [int(part) for part in args.seeds.split(",")]
    ks = [k for k in (2, 4, 8, 16, 32, 64) if k <= args.references]
    per_seed = []
    for seed in seeds:
        config = MIAConfig(train="mia:train_mlp", num_references=args.references, population_fraction=args.population_fraction, seed=seed)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="mia-") as directory:
            run = run_mia_audit(config, directory, max_workers=args.workers)
            store = RunStore(directory)
            signals = np.array([store.load(i)["signals"] for i in range(args.references + 1)])
        wall = time.perf_counter() - start
        population, members, membership = draws(seed, signals.shape[1], args.references, run.result.num_population)
        target, reference, is_member = signals[-1], signals[:-1], members[~population]
        loss = attack_metrics(loss_scores(target[~population]), is_member, fpr=0.01)
        entry = {
            "seed": seed,
            "wall_time_s": wall,
            "models": args.references + 1,
            "loss": {"tpr_at_1pct_fpr": float(loss.tpr[0]), "auc": loss.auc},
            "by_references": {str(k): attacks_with(k, target, reference, membership, population, is_member, config) for k in ks},
        }
        print(json.dumps({"seed": seed, "loss": entry["loss"], "wall_time_s": round(wall, 1)}), flush=True)
        for k, attacks in entry["by_references"].items():
            print(f"  k={k}: " + ", ".join(f"{name} {v['tpr_at_1pct_fpr']:.4f}/{v['auc']:.3f}" for name, v in attacks.items()), flush=True)
        per_seed.append(entry)

    def mean(path):
        values = []
        for entry in per_seed:
            node = entry
            for key in path:
                node = node.get(key) if isinstance(node, dict) else None
            if node is not None:
                values.append(node)
        return float(np.mean(values)) if values else None

    names = ("lira-online", "lira-online-per-record", "lira-offline", "rmia-online", "rmia-offline", "rmia-online-fraction", "rmia-offline-fraction")
    summary = {
        "loss": {metric: mean(("loss", metric)) for metric in ("tpr_at_1pct_fpr", "auc")},
        "by_references": {
            str(k): {name: {metric: mean(("by_references", str(k), name, metric)) for metric in ("tpr_at_1pct_fpr", "auc")} for name in names} for k in ks
        },
    }
    report = {
        "benchmark": "mia",
        "dataset": f"digits (1797 records; {args.population_fraction:.0%} population samples z, the rest attacked)",
        "train": "benchmarks/mia.py:train_mlp as --train mia:train_mlp",
        "seeds": seeds,
        "mean": summary,
        "orderings": orderings(summary["by_references"]),
        "scoring": scoring,
        "streamed_scoring": streamed,
        "per_seed": per_seed,
        "machine": machine,
        "versions": library_versions(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    print(json.dumps(report["orderings"], indent=2))


if __name__ == "__main__":
    main()
