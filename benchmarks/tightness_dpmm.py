"""dpmm's (or smartnoise-synth's) DP generators on statsmodels' ``fair`` survey, audited by cell canaries: the dpmm rows of ``benchmarks/tightness.py`` (``--only dpmm``).

Run it in the dpmm extra's own environment (dpmm pins numpy 1.26)::

    PYTHONPATH=src .venv-dpmm/bin/python benchmarks/tightness_dpmm.py --seeds 10 --case "noise removed"

or, with ``--library smartnoise``, in the smartnoise extra's (smartnoise-synth's
MST and AIM through ``smartnoise_generators``, the same declared bounds and
bins; its numbers are released at their bins' centres)::

    PYTHONPATH=src .venv-smartnoise/bin/python benchmarks/tightness_dpmm.py --library smartnoise --seeds 3 --case "run at"

The table: the whole ``fair`` survey (6,366 rows, 9 columns; read from the
CSV that statsmodels ships, never downloaded); each seed draws 3,000
training rows. The domain is declared for every column, so the claim covers
the whole release: each column's public range (the survey's codebook range,
here the full table's minimum and maximum) cut into dpmm's default 20 bins.
Each seed runs the synthetic-data audit's bound
(:func:`privaudit.audits.synthetic_data.bound.generator_bound`, as
``privaudit audit synthetic-data --canaries`` runs it for a generator that
states its binning): ``CANARIES`` cell canaries (a training row with one
value moved into a one-way cell the training table leaves empty), each
included by a fair coin, one generation of ``ROWS`` × 3,000 rows, scored by
the marginal attack on each canary's own cells, Steinke et al.'s one-run
bound at 95% and δ = 1e-5.

Cases: MST with its noise removed and MST run at ε = 10⁴, each against a
claim of 1 (flagged when the bound passes 1; bound ÷ the ceiling); MST and
AIM at ε = 1 and 4 against their own claim (bound ÷ claim, and how often the
correct claim is flagged); a generator that states the same binning and
copies its training rows (bound ÷ the ceiling). ``--iterations`` is dpmm's
``n_iters`` of the model's inference: below about 3,000 the inference leaves
mass in empty cells, which dilutes a noise-free MST's trace (1,000: bound ÷
ceiling 0.6-0.8 against 1.0 at 5,000, two pilot seeds each).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

CANARIES, ROWS, TRAIN_ROWS, ITERATIONS = 50, 4, 3000, 3000
#: (model, the ε it runs at, the ε claimed); None runs MST with its noise removed, "copy" releases the training rows
CASES: tuple[tuple[str, float | None, float | None], ...] = (
    ("mst", None, 1.0),
    ("mst", 1e4, 1.0),
    ("copy", None, None),
    ("mst", 1.0, 1.0),
    ("mst", 4.0, 4.0),
    ("aim", 1.0, 1.0),
    ("aim", 4.0, 4.0),
)


def fair() -> Any:
    """statsmodels' ``fair`` survey, read from the CSV statsmodels ships (its loader is not imported: statsmodels' own imports clash with dpmm's scipy)."""
    import pandas as pd

    spec = importlib.util.find_spec("statsmodels")
    if spec is None or spec.origin is None:
        raise SystemExit("benchmarks/tightness_dpmm.py needs statsmodels installed for its `fair` survey (pip install statsmodels)")
    return pd.read_csv(Path(spec.origin).parent / "datasets" / "fair" / "fair.csv")


class CopyingWithBinning:
    """Releases its training rows (all of them, the rest resampled) and states the binning of ``binning``: the audit's cell canaries apply."""

    def __init__(self, binning: Any) -> None:
        self.binning = binning

    def marginal_cells(self, train_df: Any, frame: Any) -> np.ndarray:
        return self.binning.marginal_cells(train_df, frame)

    def cell_values(self, train_df: Any) -> dict:
        return self.binning.cell_values(train_df)

    def __call__(self, train_df: Any, *, seed: int, n: int) -> Any:
        import pandas as pd

        extra = train_df.sample(n=n - len(train_df), replace=True, random_state=seed) if n > len(train_df) else train_df.iloc[:0]
        return pd.concat([train_df, extra], ignore_index=True).iloc[:n].reset_index(drop=True)


def generator(model: str, epsilon: float | None, frame: Any, iterations: int, library: str = "dpmm") -> Any:
    from privaudit.audits.synthetic_data.dpmm_generators import NO_NOISE_EPSILON, DpmmGenerator

    bounds = {column: (float(frame[column].min()), float(frame[column].max())) for column in frame.columns}
    if library == "smartnoise":
        from privaudit.audits.synthetic_data.smartnoise_generators import SmartnoiseGenerator

        if model == "copy":
            return CopyingWithBinning(SmartnoiseGenerator("mst", 1.0, bounds=bounds))
        return SmartnoiseGenerator(model, NO_NOISE_EPSILON if epsilon is None else epsilon, 1e-5, bounds=bounds)
    if model == "copy":
        return CopyingWithBinning(DpmmGenerator("mst", 1.0, bounds=bounds))
    return DpmmGenerator(model, NO_NOISE_EPSILON if epsilon is None else epsilon, 1e-5, bounds=bounds, iterations=iterations)


def run_case(
    model: str, epsilon: float | None, claimed: float | None, seeds: int, *, start: int = 0, iterations: int = ITERATIONS, library: str = "dpmm"
) -> dict:
    """The bound of each seed, its ceiling, and the verdict on ``claimed``; ratio to the claim when the generator is correct, else to the ceiling."""
    from privaudit.audits.synthetic_data.bound import generator_bound
    from privaudit.audits.synthetic_data.cell_canaries import cell_canaries, home_count
    from privaudit.audits.synthetic_data.table import read_frame
    from privaudit.stats.verdict import Claim

    frame = fair()
    function = generator(model, epsilon, frame, iterations, library)
    claim = None if claimed is None else Claim(claimed, 1e-5, quantity="per-release")
    bounds, ceilings, homes, flagged, started = [], [], [], 0, time.perf_counter()
    for seed in range(start, start + seeds):
        rows = np.random.default_rng(seed).permutation(len(frame))[:TRAIN_ROWS]
        train = read_frame(frame.iloc[np.sort(rows)].reset_index(drop=True), "--train")
        canary_seed, coins_seed, release_seed = (int(s) for s in np.random.SeedSequence(seed).generate_state(3))
        canaries = cell_canaries(function, train.frame, CANARIES, np.random.default_rng(canary_seed))
        result = generator_bound(
            function, train, canaries, coins_seed=coins_seed, release_seed=release_seed, n=ROWS * TRAIN_ROWS,
            delta=1e-5, confidence=0.95, claim=claim, canaries_how="benchmark",
        )  # fmt: skip
        bounds.append(result.bound.epsilon)
        ceilings.append(result.ceiling)
        homes.append(home_count(function, train.frame))
        flagged += bool(result.verdict is not None and result.verdict.flagged)
        print(f"{model} ε={epsilon} claim {claimed} seed {seed}: bound {result.bound.epsilon:.3f}, ceiling {result.ceiling:.3f}", flush=True)
    correct = epsilon is not None and claimed is not None and epsilon <= claimed
    ratios = [b / claimed for b in bounds] if correct else [b / c for b, c in zip(bounds, ceilings, strict=True)]
    return {
        "ratio": ratios,
        "ratio_to": "the claim" if correct else "the ceiling",
        "bounds": bounds,
        "ceilings": ceilings,
        "empty_cells": homes,
        "rejected": flagged,
        "positive": sum(b > 0 for b in bounds),
        "runs": seeds,
        "seeds": list(range(start, start + seeds)),
        "iterations": iterations if library == "dpmm" else None,
        "library": library,
        "seconds_per_run": (time.perf_counter() - started) / seeds,
    }


def case_name(model: str, epsilon: float | None, claimed: float | None, library: str = "dpmm") -> str:
    setting = f"fair (9 columns, declared domain, 20 bins), m = {CANARIES} cell canaries"
    if model == "copy":
        return f"a generator copying its training rows ({library}'s binning stated), {setting}: bound ÷ its ceiling"
    label = library + " " + {"mst": "MST", "aim": "AIM"}[model]
    if epsilon is None:
        return f"{label} with its noise removed (ε = 10⁶) claiming {claimed:g}, {setting}: bound ÷ its ceiling"
    if claimed is not None and epsilon > claimed:
        return f"{label} run at ε = {epsilon:g} claiming {claimed:g}, {setting}: bound ÷ its ceiling"
    return f"{label}, ε = {epsilon:g}, {setting}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--start", type=int, default=0, help="the first seed")
    parser.add_argument("--case", default=None, help="only the cases whose name contains this text")
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help="dpmm's n_iters of the model's inference")
    parser.add_argument("--library", choices=("dpmm", "smartnoise"), default="dpmm", help="whose MST and AIM (each in its extra's environment)")
    parser.add_argument("--output", type=Path, default=None, help="default: benchmarks/results/tightness_<library>.json")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.iterations < 1:
        parser.error(f"--seeds and --iterations must be >= 1, got {args.seeds} and {args.iterations}")
    sys.path.insert(0, str(Path(__file__).parent))
    from results_io import write_results

    from privaudit._core.results import library_versions

    cases = [case for case in CASES if args.case is None or args.case.lower() in case_name(*case, args.library).lower()]
    if args.library == "smartnoise":
        cases = [case for case in cases if case[0] != "privbayes"]
    if not cases:
        parser.error(f"--case {args.case!r} names no case")
    out = {
        "table": "statsmodels fair, 3,000 training rows per seed, declared domain (each column's full-table range, 20 bins)",
        "canaries": CANARIES,
        "rows_per_training_row": ROWS,
        "confidence": 0.95,
        "delta": 1e-5,
        "cases": {
            case_name(*case, args.library): run_case(*case, args.seeds, start=args.start, iterations=args.iterations, library=args.library) for case in cases
        },
        "versions": library_versions(),
    }
    write_results(out, args.output or Path(f"benchmarks/results/tightness_{args.library}.json"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
