"""The dpmm rows of ``benchmarks/tightness.py`` (``--only dpmm``, in the dpmm extra's own environment): MST and AIM at ε = 1 and 4, and MST with its noise removed.

The table: scikit-learn's wine, four columns (alcohol, flavanoids, proline,
the cultivar as a string), split in halves by the seed; the generator is
trained on the first half with the canaries. Each seed runs the
synthetic-data audit's bound (:func:`privaudit.audits.synthetic_data.bound.generator_bound`,
the one ``privaudit audit synthetic-data --canaries`` runs): ``CANARIES``
outliers of the schema (each number beyond the training range), each
included by a fair coin, one generation of as many rows as the training
half, Steinke et al.'s one-run bound at 95% and δ = 1e-5.

The domain is declared, so the claim covers the release: each numeric
column's bounds are the full wine table's range widened by 1.5 times its
width on each side (public, fixed before the coins, and wide enough for
every canary), cut into ``BINS`` bins; the cultivars are the categories.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

COLUMNS = ["alcohol", "flavanoids", "proline", "target"]
CANARIES, BINS, ITERATIONS, ROWS = 100, 100, 1000, 4  # ROWS: synthetic rows per training row (--num-synthetic)
CASES = (("mst", None), ("mst", 1.0), ("mst", 4.0), ("aim", 1.0), ("aim", 4.0))  # ε None: MST with its noise removed


def _wine() -> Any:
    from sklearn.datasets import load_wine  # ships with scikit-learn, never downloaded

    frame = load_wine(as_frame=True).frame[COLUMNS].copy()
    frame["target"] = frame["target"].map(lambda v: f"cultivar_{v}").astype(object)
    return frame


def _generator(model: str, epsilon: float, frame: Any):
    from privaudit.audits.synthetic_data.dpmm_generators import DpmmGenerator

    bounds = {}
    for column in COLUMNS[:-1]:
        low, high = float(frame[column].min()), float(frame[column].max())
        bounds[column] = (low - 1.5 * (high - low), high + 1.5 * (high - low))
    categories = {"target": sorted(frame["target"].unique())}
    return DpmmGenerator(model, epsilon, 1e-5, bins=BINS, bounds=bounds, categories=categories, iterations=ITERATIONS)


def run_case(model: str, epsilon: float | None, seeds: int) -> dict:
    """Bound ÷ claim (or ÷ ceiling without noise) over ``seeds`` seeds."""
    from privaudit.audits.synthetic_data.bound import generator_bound
    from privaudit.audits.synthetic_data.dpmm_generators import NO_NOISE_EPSILON
    from privaudit.audits.synthetic_data.generation import make_canaries
    from privaudit.audits.synthetic_data.table import read_frame
    from privaudit.stats.verdict import Claim

    frame = _wine()
    generator = _generator(model, NO_NOISE_EPSILON if epsilon is None else epsilon, frame)
    claim = None if epsilon is None else Claim(epsilon, 1e-5, quantity="per-release")
    bounds, ceilings, flagged, started = [], [], 0, time.perf_counter()
    for seed in range(seeds):
        order = np.random.default_rng(seed).permutation(len(frame))
        train = read_frame(frame.iloc[np.sort(order[: len(frame) // 2])].reset_index(drop=True), "--train")
        seeds_of = np.random.SeedSequence(seed).generate_state(3)
        canaries = make_canaries(train, CANARIES, np.random.default_rng(int(seeds_of[0])))
        result = generator_bound(
            generator,
            train,
            canaries,
            coins_seed=int(seeds_of[1]),
            release_seed=int(seeds_of[2]),
            n=ROWS * len(train),
            delta=1e-5,
            confidence=0.95,
            claim=claim,
            canaries_how="benchmark",
        )
        bounds.append(result.bound.epsilon)
        ceilings.append(result.ceiling)
        flagged += bool(result.verdict is not None and result.verdict.flagged)
        print(f"dpmm {model} ε={epsilon} seed {seed}: bound {result.bound.epsilon:.3f}, ceiling {result.ceiling:.3f}", flush=True)
    seconds = (time.perf_counter() - started) / seeds
    if epsilon is None:
        ratios = [b / c for b, c in zip(bounds, ceilings, strict=True)]
        return {"ratio": ratios, "bounds": bounds, "ceilings": ceilings, "positive": sum(b > 0 for b in bounds), "runs": seeds, "seconds_per_run": seconds}
    return {
        "ratio": [b / epsilon for b in bounds],
        "bounds": bounds,
        "ceilings": ceilings,
        "rejected": flagged,
        "runs": seeds,
        "seconds_per_run": seconds,
    }


def case_name(model: str, epsilon: float | None) -> str:
    label = {"mst": "MST", "aim": "AIM"}[model]
    if epsilon is None:
        return f"dpmm {label} with its noise removed (ε = 10⁶), wine (4 columns), m = {CANARIES}: bound ÷ its ceiling"
    return f"dpmm {label}, ε = {epsilon:g}, wine (4 columns, declared domain), m = {CANARIES} canaries"
