"""ε of DP-SGD with shuffled fixed-size batches beside the Poisson accounting it is often claimed under: ``python benchmarks/shuffling_epsilon.py [--output FILE]``.

For each setting (noise σ, S steps per epoch, E epochs, δ = 1e-5) three ε:

* ``lower``: :func:`privaudit.stats.shuffling.shuffled_epsilon_lower_bound`,
  the Monte Carlo lower bound at 95% on the shuffled loop's ε, with its point
  ``estimate``, for the opposed pair (other records' gradients opposing the
  audited one's: the short batch gives it away) and, as ``lower_zero``, the
  zero pair (other records' gradients 0); n = min(``--max-samples``,
  ``--budget`` / (S·E)) draws per direction;
* ``upper``: E Gaussian steps composed, μ = √E/σ, no amplification credited:
  an upper bound where a neighbour replaces the record by one of zero
  gradient, and for both pairs as modelled here (the short batch at a
  uniform step), not for add/remove with the short batch at a known step;
* ``poisson``: the accounting the loop claims, Poisson sampling at q = 1/S
  for T = S·E steps, dp_accounting's pessimistic PLD
  (:func:`privaudit.stats.conversions.gaussian_epsilon`): an upper bound on
  Poisson's ε, so ``lower`` above it means the shuffled loop's ε exceeds the
  Poisson claim (at 95% for that setting; the grid is not corrected for
  multiplicity).

``ratio`` is lower ÷ poisson; ``broken`` lists the settings with ratio > 1.
The grid: σ ∈ {0.5, 0.7, 1.0, 2.0}, S ∈ {10, 29, 100}, E ∈ {1, 3, 10}, and
the zoo's digits loop: 1,797 records in batches of 64 is 28.08 steps per
epoch; S = 29 as Opacus' loader has length 29 (its last batch short), σ =
0.964, E = 3, whose claimed ε is 3 (Opacus' own accountant, q = 64/1797,
87 steps), with ``--zoo-samples`` draws. Prints one JSON line per setting,
then the whole JSON, which goes to ``benchmarks/results/shuffling_epsilon.json``
(or ``--output``). Run from the repository root with ``PYTHONPATH=src``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

from results_io import write_results  # benchmarks/results_io.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions
from privaudit.stats.conversions import gaussian_epsilon
from privaudit.stats.shuffling import shuffled_epsilon_lower_bound

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-5
SIGMAS, STEPS, EPOCHS = (0.5, 0.7, 1.0, 2.0), (10, 29, 100), (1, 3, 10)
ZOO = {"sigma": 0.964, "steps": 29, "epochs": 3, "claimed": 3.0, "note": "1797 digits records, batches of 64: 28.08 steps; Opacus' loader has length 29"}


def row(sigma: float, steps: int, epochs: int, samples: int, seed: int) -> dict:
    """The three ε of one setting, with the bound's sample count and wall time."""
    started = time.perf_counter()
    found = shuffled_epsilon_lower_bound(sigma, steps, epochs, DELTA, samples=samples, seed=seed, pair="opposed")
    zero = shuffled_epsilon_lower_bound(sigma, steps, epochs, DELTA, samples=samples, seed=seed, pair="zero")
    seconds = time.perf_counter() - started
    poisson = gaussian_epsilon(sigma, DELTA, sampling_prob=1.0 / steps, num_steps=steps * epochs)
    return {
        "sigma": sigma,
        "steps_per_epoch": steps,
        "epochs": epochs,
        "delta": DELTA,
        "lower": round(found.epsilon, 4),
        "estimate": round(found.estimate, 4),
        "lower_zero": round(zero.epsilon, 4),
        "upper": round(gaussian_epsilon(sigma, DELTA, num_steps=epochs), 4),
        "poisson": round(poisson, 4),
        "ratio": round(found.epsilon / poisson, 3),
        "samples": samples,
        "needed": found.needed,
        "confidence": found.confidence,
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=6e7, help="normals drawn per direction per setting: n = budget / (S·E)")
    parser.add_argument("--max-samples", type=int, default=2_000_000)
    parser.add_argument("--zoo-samples", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "shuffling_epsilon.json")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    for sigma, steps, epochs in itertools.product(SIGMAS, STEPS, EPOCHS):
        samples = min(args.max_samples, int(args.budget // (steps * epochs)))
        rows.append(row(sigma, steps, epochs, samples, args.seed))
        print(json.dumps(rows[-1]), flush=True)
    zoo = row(ZOO["sigma"], ZOO["steps"], ZOO["epochs"], args.zoo_samples, args.seed) | {"claimed": ZOO["claimed"], "note": ZOO["note"]}
    print(json.dumps(zoo), flush=True)
    broken = [{key: r[key] for key in ("sigma", "steps_per_epoch", "epochs", "lower", "poisson", "ratio")} for r in [*rows, zoo] if r["ratio"] > 1.0]
    out = {
        "benchmark": "shuffling_epsilon",
        "command": "PYTHONPATH=src python benchmarks/shuffling_epsilon.py",
        "settings": vars(args) | {"output": str(args.output)},
        "rows": rows,
        "zoo": zoo,
        "broken": broken,
        "seconds": round(time.perf_counter() - started, 1),
        "versions": library_versions(),
    }
    write_results(out, args.output)


if __name__ == "__main__":
    main()
