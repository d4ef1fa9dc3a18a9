"""A real privacy bug found from samples: diffprivlib's LinearRegression, issue #105: ``python benchmarks/mechanism_diffprivlib_105.py --variant released|fixed``.

diffprivlib (0.6.6, the release on PyPI) computes the sensitivity of each
squared feature from the lower bound twice (``models/linear_regression.py``
line 144, IBM/differential-privacy-library#105): with ``bounds_X = (0, 100)``
it is 0 and that term gets no noise. Pull request #110 (open, not released)
changes one character. ``--variant released`` audits the installed package;
``--variant fixed`` copies it to a temporary folder, applies #110's change
there and audits that copy (the installed package is not touched).

The mechanism: ``LinearRegression(epsilon=1, bounds_X=(0, 100),
bounds_y=(0, 100), fit_intercept=False)`` fitted on one feature, its
coefficient released; seeded through ``random_state``. D: ten records (x, x)
for x in [1, 2]; D' adds the record (100, 0). The claim is diffprivlib's:
ε = 1 for one record added or removed.

diffprivlib does not import beside scikit-learn >= 1.8, so this runs in a
venv of its own, e.g. ``pip install -e . diffprivlib==0.6.6 'scikit-learn<1.8'``,
from the repository root with PYTHONPATH=src. Writes
benchmarks/results/mechanism_diffprivlib_105_VARIANT.json (or ``--output``).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from results_io import write_results  # benchmarks/results_io.py: the script's own folder is on sys.path

BUGGY = "bounds_X[0][i], bounds_X[0][i]"
FIXED = "bounds_X[0][i], bounds_X[1][i]"  # IBM/differential-privacy-library#110


def _use_fixed_copy(folder: Path) -> None:
    """Copy the installed diffprivlib into ``folder`` with #110's fix and import from there (diffprivlib must not be imported yet)."""
    spec = importlib.util.find_spec("diffprivlib")
    if spec is None or spec.origin is None:
        raise SystemExit("error: diffprivlib is not installed")
    copy = folder / "diffprivlib"
    shutil.copytree(Path(spec.origin).parent, copy)
    source = copy / "models" / "linear_regression.py"
    text = source.read_text(encoding="utf-8")
    if BUGGY not in text:
        raise SystemExit("error: this diffprivlib does not contain the line of issue #105")
    source.write_text(text.replace(BUGGY, FIXED), encoding="utf-8")
    sys.path.insert(0, str(folder))


def linear_regression(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    from diffprivlib.models import LinearRegression

    state = np.random.RandomState(int(rng.integers(2**31 - 1)))
    x, y = dataset[:, :1], dataset[:, 1]
    coefficients = np.empty(size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diffprivlib warns about its own settings on every fit
        for index in range(size):
            model = LinearRegression(epsilon=1.0, bounds_X=(0, 100), bounds_y=(0, 100), fit_intercept=False, random_state=state)
            coefficients[index] = model.fit(x, y).coef_.ravel()[0]
    return coefficients


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("released", "fixed"), required=True)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--pilot-samples", type=int, default=400)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        if args.variant == "fixed":
            _use_fixed_copy(Path(folder))
        from importlib.metadata import version

        from privaudit.audits.mechanism.audit import audit_mechanism

        x = np.linspace(1.0, 2.0, 10)
        dataset = np.column_stack([x, x])
        neighbour = np.vstack([dataset, [100.0, 0.0]])
        runs = []
        for seed in range(args.seeds):
            start = time.perf_counter()
            result = audit_mechanism(linear_regression, dataset, neighbour, epsilon=1.0, samples=args.samples, pilot_samples=args.pilot_samples, seed=seed)
            runs.append({"seed": seed, "epsilon_lower_bound": result.epsilon, "verdict": result.verdict, "seconds": time.perf_counter() - start})
        report = {
            "variant": args.variant,
            "diffprivlib": version("diffprivlib"),
            "issue": "https://github.com/IBM/differential-privacy-library/issues/105",
            "claim": result.claim,
            "pair": result.pair.how,
            "samples_per_run": result.total_samples,
            "rejected": sum(run["verdict"] != "not rejected" for run in runs),
            "runs": runs,
        }
    output = args.output or Path(f"benchmarks/results/mechanism_diffprivlib_105_{args.variant}.json")
    write_results(report, output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
