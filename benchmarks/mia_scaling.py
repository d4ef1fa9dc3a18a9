"""Reference models per second of the mia audit's jobs on the runner, local and on Ray, at 1 and 2 workers: ``python benchmarks/mia_scaling.py [--models 8] [--repeats 2]``.

Each measurement runs ``--models`` reference-model jobs of the audit
(:func:`privaudit.audits.mia.training.train_and_score`: train on the model's
half of digits, score every record) through :func:`privaudit.runner.run_all`
into a fresh run store, with :func:`train_mlp_heavy` below as the user's
``--train`` (an MLP held to ``--epochs`` epochs, so each model is seconds of
work and the runner's per-job cost does not dominate). Two throughputs:

* ``models_per_s``: models / wall time, start-up included (process pool or
  Ray instance started and stopped by :func:`run_all`);
* ``steady_models_per_s``: (models − workers) / (last save − the workers-th
  save), the rate once every worker is busy.

The scaling efficiency is throughput at 2 workers / (2 × throughput at 1).
The load average before each measurement is recorded: on a shared machine
other jobs take cores too. Results go to ``benchmarks/results/mia_scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit.audits.mia.audit import _jobs
from privaudit.audits.mia.config import MIAConfig
from privaudit.audits.mia.training import train_and_score
from privaudit.runner import RunStore, run_all

HERE = Path(__file__).resolve().parent


def train_mlp_heavy(x_train, y_train, *, seed, epochs=500):
    """A user's --train: scikit-learn's MLP (128 hidden units) for exactly ``epochs`` epochs of Adam, one BLAS thread."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    model = MLPClassifier(hidden_layer_sizes=(128,), alpha=0.0, max_iter=epochs, tol=0.0, n_iter_no_change=epochs + 1, random_state=seed)
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(x_train, y_train)


def measure(jobs, backend, workers):
    """One run of ``jobs`` on a fresh store: wall time, the time of each save, and the load average before it."""
    saves = []
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mia-scaling-") as directory:
        start = time.perf_counter()
        run_all(
            train_and_score,
            jobs,
            store=RunStore(directory),
            backend=backend,
            max_workers=workers,
            progress=lambda done, total: saves.append(time.perf_counter()),
        )
        wall = time.perf_counter() - start
    saves = [moment - start for moment in saves]
    steady = (len(jobs) - workers) / (saves[-1] - saves[workers - 1]) if len(jobs) > workers else None
    return {"wall_s": wall, "models_per_s": len(jobs) / wall, "steady_models_per_s": steady, "save_times_s": saves, "load_average_1min_before": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=8, help="reference models trained per measurement")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--backends", default="local,ray")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "mia_scaling.json")
    args = parser.parse_args()
    # the workers import --train's module: local ones get sys.path from the parent, Ray's read PYTHONPATH
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), *sys.path[1:], os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    config = MIAConfig(train="mia_scaling:train_mlp_heavy", num_references=max(4, args.models + args.models % 2), seed=0)
    jobs = _jobs(config)[: args.models]  # the references only
    runs = {}
    for repeat in range(args.repeats):
        for backend in args.backends.split(","):
            for workers in (1, 2):
                entry = measure(jobs, backend, workers)
                runs.setdefault(f"{backend}-{workers}", []).append(entry)
                shown = {key: round(value, 3) for key, value in entry.items() if isinstance(value, float)}
                print(json.dumps({"repeat": repeat, "backend": backend, "workers": workers, **shown}), flush=True)

    def best(name, key):
        values = [entry[key] for entry in runs[name] if entry[key] is not None]
        return max(values) if values else None

    summary = {}
    for backend in args.backends.split(","):
        row = {}
        for key in ("models_per_s", "steady_models_per_s"):
            one, two = best(f"{backend}-1", key), best(f"{backend}-2", key)
            row[key] = {"1_worker": one, "2_workers": two, "efficiency": two / (2 * one) if one and two else None}
            row[key]["efficiency_per_repeat"] = [
                b[key] / (2 * a[key]) if a[key] and b[key] else None for a, b in zip(runs[f"{backend}-1"], runs[f"{backend}-2"], strict=True)
            ]
        summary[backend] = row
    report = {
        "benchmark": "mia scaling",
        "task": f"{args.models} reference models of the mia audit on digits, --train benchmarks/mia_scaling.py:train_mlp_heavy (128 hidden, 500 epochs)",
        "best_of_repeats": summary,
        "runs": runs,
        "cpu_count": os.cpu_count(),
        "machine": {"platform": platform.platform(), "cpu": _cpu_name(), "python": platform.python_version()},
        "versions": library_versions(),
        "mean_load_average_before": float(np.mean([entry["load_average_1min_before"] for entries in runs.values() for entry in entries])),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
