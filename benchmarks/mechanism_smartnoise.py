"""smartnoise-synth's MST through its adapter, on a small embedded table: ``python benchmarks/mechanism_smartnoise.py [--samples N] [--pilot-samples N]``.

D is 30 records of two categorical columns with values in {0, 1, 2}; D' adds
the record (0, 1), inside the categories D already has (MST takes its
categories from the data, so a record with a new category would change the
output's domain). Each sample is MST (ε = 1, δ = 1e-9) fitted on the
records, releasing a synthetic table of 20 rows. MST fits take about 2.5 s
each on 2 cores, so the budget is small: the audit shows the adapter runs
end to end and that the correct configuration is not rejected.

smartnoise-synth 1.0.8 needs opacus < 0.15, which conflicts with the
project's test extra: run this in an environment of its own
(``pip install torch==2.13.0 && pip install -e . smartnoise-synth``), from
the repository root with PYTHONPATH=src. Writes
benchmarks/results/mechanism_smartnoise.json (or ``--output``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
from results_io import write_results  # benchmarks/results_io.py: the script's own folder is on sys.path

from privaudit.audits.mechanism.audit import audit_mechanism
from privaudit.integrations.dp_libraries import smartnoise_synthesizer

TABLE = np.array([[index % 3, (index * 7) % 3] for index in range(30)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--pilot-samples", type=int, default=20)
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/mechanism_smartnoise.json"))
    args = parser.parse_args(argv)
    mechanism = smartnoise_synthesizer("mst", 1.0, rows=20)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # smartnoise-synth warns about its preprocessing on every fit
        result = audit_mechanism(
            mechanism, TABLE, np.vstack([TABLE, [0, 1]]), samples=args.samples, pilot_samples=args.pilot_samples, search_samples=10, **mechanism.claim
        )
    report = {
        "smartnoise-synth": version("smartnoise-synth"),
        "claim": result.claim,
        "verdict": result.verdict,
        "epsilon_lower_bound": result.epsilon,
        "fraction_of_claim": result.fraction_of_claim,
        "samples": result.total_samples,
        "output_shape": list(result.output_shape),
        "seconds": time.perf_counter() - start,
    }
    write_results(report, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
