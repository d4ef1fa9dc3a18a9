"""Cost of one-shot FL estimation: ``python benchmarks/fl.py [--dimension 1000000] [--num-canaries 1000]``.

* estimation time after the run for d, k: the canaries' cosines with a final
  model, either regenerating the canaries from their seeds chunk by chunk
  (memory bounded by the budget) or with the canaries still held from the run
  (a budget of 4·k·d bytes, as :func:`gaussian_mechanism_cosines` keeps them),
  and, separately, ε_est + ε_lo + the Anderson–Darling check from the cosines;
* training overhead of the canaries on the digits DP-FedAvg simulator (one
  run with 8 participations), with 100 canaries among 1,347 one-example
  clients and with 1,000 canaries among 269 five-example clients: no canaries vs.
  canaries with the final-model statistic only (Algorithm 2) vs. also every
  iterate (Algorithm 3); medians of ``--repeats`` runs;
* peak memory (resident set, ru_maxrss) of the process.

Prints JSON and writes benchmarks/results/fl.json.
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import time
from pathlib import Path

import numpy as np
from results_io import write_results
from run import _cpu_name  # benchmarks/run.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit.canaries.update import UpdateCanaries
from privaudit.data.tabular import load_dataset
from privaudit.stats.one_shot import anderson_gaussianity, epsilon_lower_bound_cosines, epsilon_one_shot
from privaudit.training.fedavg import FedAvgConfig, model_dimension, simulate_fedavg


def _estimation(dimension, k):
    canaries = UpdateCanaries(k, dimension, 0)
    model = np.random.default_rng(1).standard_normal(dimension)
    started = time.perf_counter()
    cosines = canaries.cosines(model)
    cosine_seconds = time.perf_counter() - started
    held = list(canaries.chunks(memory_budget_bytes=4 * k * dimension))  # kept from the run, not timed
    started = time.perf_counter()
    target = (model / np.linalg.norm(model)).astype(np.float32)
    held_cosines = np.concatenate([block @ target for _, block in held])
    held_seconds = time.perf_counter() - started
    assert np.allclose(held_cosines, cosines, atol=1e-6)
    del held
    started = time.perf_counter()
    epsilon_one_shot(cosines, dimension=dimension, delta=1e-6)
    epsilon_lower_bound_cosines(cosines, dimension=dimension, delta=1e-6)
    anderson_gaussianity(cosines)
    return cosine_seconds, held_seconds, time.perf_counter() - started


def _training(repeats, num_canaries, examples_per_client):
    data = load_dataset("digits", seed=0)
    config = FedAvgConfig(num_rounds=80, sampling="fixed", participations=8, noise_multiplier=0.5, examples_per_client=examples_per_client)
    canaries = UpdateCanaries(num_canaries, model_dimension(64, 10, 128), 0)
    cases = {"no canaries": dict(insert_canaries=False, track_all=False), "final model (Algorithm 2)": dict(track_all=False), "all iterates (Algorithm 3)": {}}
    samples = {name: [] for name in cases}
    for _ in range(repeats):  # interleaved, so drifts of a shared machine hit every case alike
        for name, flags in cases.items():
            samples[name].append(simulate_fedavg(data, config, canaries, num_observed=num_canaries, **flags).seconds)
    base = statistics.median(samples["no canaries"])
    clients = len(data.x_train) // examples_per_client
    return {
        "canaries": num_canaries,
        "real_clients": clients,
        **{name: {"seconds": statistics.median(s), "overhead": statistics.median(s) / base - 1} for name, s in samples.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dimension", type=int, default=10**6)
    parser.add_argument("--num-canaries", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "fl.json")
    args = parser.parse_args()
    cosine_seconds, held_seconds, estimate_seconds = _estimation(args.dimension, args.num_canaries)
    report = {
        "benchmark": "one-shot FL estimation",
        "command": f"python benchmarks/fl.py --dimension {args.dimension} --num-canaries {args.num_canaries} --repeats {args.repeats}",
        "estimation": {
            "dimension": args.dimension,
            "num_canaries": args.num_canaries,
            "cosines_seconds_regenerating": cosine_seconds,
            "cosines_seconds_canaries_held": held_seconds,
            "estimates_seconds": estimate_seconds,
            "after_the_run_seconds_canaries_held": held_seconds + estimate_seconds,
        },
        # the paper's canaries are a small share of the clients; the default digits config has more canaries than clients
        "training_digits_100_canaries_1437_clients": _training(args.repeats, 100, 1),
        "training_digits_1000_canaries_287_clients": _training(args.repeats, 1000, 5),
        "peak_memory_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "machine": {"cpu": _cpu_name(), "platform": platform.platform()},
        "versions": library_versions(),
    }
    write_results(report, args.output)


if __name__ == "__main__":
    main()
