"""Wall time of a 3,000-row no-box synthetic-data audit, with sdmetrics' scores and without: ``python benchmarks/synthetic_data_speed.py [--rows 3000]``.

The table is statsmodels' ``fair`` survey (6,366 records, 9 columns, its
codes as integers, read as categories with ``--categorical``), shipped
inside statsmodels. Seeded disjoint slices of ``--rows`` records are the
training table, the holdout and the release (rows of the same population,
the first 20 replaced by training rows). Each audit runs in this process
(``AUDIT.run``, no shadows, no canaries): once with sdmetrics' two DCR
scores (where sdmetrics is installed) and once with ``sdmetrics`` off
(``--no-sdmetrics``). Output: ``benchmarks/results/synthetic_data_speed.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
from results_io import write_results  # benchmarks/results_io.py: the script's own folder is on sys.path

from privaudit.audits.synthetic_data import AUDIT, SyntheticDataConfig

CODES = ("rate_marriage", "religious", "educ", "occupation", "occupation_husb")


def _tables(folder: Path, rows: int) -> dict[str, str]:
    from statsmodels.datasets import fair

    frame = fair.load_pandas().data.astype({column: int for column in CODES})
    frame.insert(0, "record", [f"R-{i:06d}" for i in range(len(frame))])
    order = np.random.default_rng(0).permutation(len(frame))
    rows = min(rows, len(frame) // 3)
    parts = {name: frame.iloc[np.sort(order[i * rows : (i + 1) * rows])].reset_index(drop=True) for i, name in enumerate(("train", "holdout", "synthetic"))}
    parts["synthetic"].iloc[:20, 1:] = parts["train"].iloc[:20, 1:].to_numpy()
    paths = {}
    for name, table in parts.items():
        paths[name] = str(folder / f"{name}.csv")
        table.to_csv(paths[name], index=False)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "synthetic_data_speed.json"))
    args = parser.parse_args()
    installed = importlib.util.find_spec("sdmetrics") is not None
    timings = {}
    with tempfile.TemporaryDirectory() as scratch:
        paths = _tables(Path(scratch), args.rows)
        for sdmetrics in (False, True) if installed else (False,):
            config = SyntheticDataConfig(**paths, id_col="record", categorical=CODES, num_shadows=0, sdmetrics=sdmetrics)
            started = time.perf_counter()
            result = AUDIT.run(config).result
            timings["with sdmetrics" if sdmetrics else "without sdmetrics"] = {
                "seconds": round(time.perf_counter() - started, 1),
                "dcr_passes": bool(result.dcr.passes),
                "sdmetrics_overfitting_protection": result.dcr.sdmetrics_overfitting_protection,
            }
            print(json.dumps(timings), flush=True)
    out = {
        "rows": {"train": args.rows, "holdout": args.rows, "synthetic": args.rows},
        "table": "statsmodels fair, codes as categories (--categorical)",
        "sdmetrics_installed": installed,
        "timings": timings,
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "python": platform.python_version()},
    }
    write_results(out, Path(args.output))


if __name__ == "__main__":
    main()
