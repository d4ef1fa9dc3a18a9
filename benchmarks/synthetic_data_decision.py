"""The steward's decision on the whole ``fair`` survey: ``python benchmarks/synthetic_data_decision.py [--rows 2000] [--seeds 3]``.

statsmodels' ``fair`` survey as a user holds it (string ids, its codes read as
categories with ``--categorical``): seeded disjoint slices of ``--rows``
records are the training table and the holdout. Five releases per seed:

* ``population``: ``--rows`` other records of the same population (clean);
* ``copula``: privaudit's built-in Gaussian copula fitted on the training table (clean);
* ``copula+20 verbatim``: that release with 20 rows replaced by training rows;
* ``copula+20 near``: the same 20 training rows with every number moved by
  5% of its interquartile range (a near copy);
* ``copula+5% outliers, 20% noise``: the copula's rows, 5% of them replaced
  by the most outlying training rows with Gaussian noise of 20% of each
  number's deviation (``memorising_copula(..., near=True, noise=0.2,
  change_category=False)``); its planted rows are those outliers;
* with ``--sdv`` (in the sdv extra's environment), two clean releases of SDV
  itself through privaudit's adapters: ``sdv gaussian copula`` and ``sdv ctgan``
  (``privaudit.audits.synthetic_data.sdv_generators``, CTGAN at its default epochs).

Each is audited no-box (``AUDIT.run``, no shadows, without sdmetrics), and
the decision recorded: whether it says the release exposes training
records, its p-values (verbatim copies, and each decision attack's at FPR 0 and 1%), how many of the planted rows it names as
copies and, where only a 1% FPR test rejects, how many members it puts
forward as the most exposed and how many of them are planted.
``--population-weight W`` replays the audits with the headline's weight of
the distance to the population set to W (0: the tie-break alone).
Output: ``benchmarks/results/synthetic_data_decision.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from synthetic_data_speed import CODES  # the fair table's integer codes

from privaudit._core.results import library_versions
from privaudit.audits.synthetic_data import AUDIT, SyntheticDataConfig
from privaudit.audits.synthetic_data.generators import MEMORISED_SHARE, gaussian_copula, memorising_copula, most_outlying


def _sdv_releases(train, rows: int, seed: int) -> dict:
    from privaudit.audits.synthetic_data import sdv_generators  # the sdv extra, in its own environment

    out = {}
    # the codes as text: SDV detects integer codes as 'ordinal', which the adapter refuses; as text they are categories, as the audit reads them
    as_text = train.drop(columns="record").astype({column: str for column in CODES})
    for name, make in (("sdv gaussian copula", sdv_generators.gaussian_copula), ("sdv ctgan", sdv_generators.ctgan)):
        table = make(as_text, seed=seed, n=rows).astype({column: int for column in CODES})
        table.insert(0, "record", [f"S-{i:06d}" for i in range(rows)])
        out[name] = table
    return out


def _releases(folder: Path, rows: int, seed: int, sdv: bool = False) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    from statsmodels.datasets import fair

    frame = fair.load_pandas().data.astype({column: int for column in CODES})
    frame.insert(0, "record", [f"R-{i:06d}" for i in range(len(frame))])
    order = np.random.default_rng(seed).permutation(len(frame))
    rows = min(rows, len(frame) // 3)
    train, holdout, population = (frame.iloc[np.sort(order[i * rows : (i + 1) * rows])].reset_index(drop=True) for i in range(3))
    copula = gaussian_copula(train.drop(columns="record"), seed=seed, n=rows)
    copula.insert(0, "record", [f"S-{i:06d}" for i in range(rows)])
    planted = train.iloc[:20]
    numbers = [c for c in train.columns if c not in CODES and c != "record"]
    near = planted.copy()
    spread = train[numbers].quantile(0.75) - train[numbers].quantile(0.25)
    near[numbers] = near[numbers] + 0.05 * spread.replace(0.0, 1.0).to_numpy()
    verbatim = copula.copy()
    verbatim.iloc[:20, 1:] = planted.iloc[:, 1:].to_numpy()
    nearly = copula.copy()
    nearly.iloc[:20, 1:] = near.iloc[:, 1:].to_numpy()
    tables = {"train": train, "holdout": holdout}
    outliers = memorising_copula(train.drop(columns="record"), seed=seed, n=rows, near=True, noise=0.2, change_category=False)
    outliers.insert(0, "record", [f"S-{i:06d}" for i in range(rows)])
    released = {"population": population, "copula": copula, "copula+20 verbatim": verbatim, "copula+20 near": nearly, "copula+5% outliers, 20% noise": outliers}
    if sdv:
        released.update(_sdv_releases(train, rows, seed))
    paths = {name: str(folder / f"{name}.csv") for name in tables}
    for name, table in tables.items():
        table.to_csv(paths[name], index=False)
    release_paths = {name: str(folder / f"release-{i}.csv") for i, name in enumerate(released)}
    for name, table in released.items():
        table.to_csv(release_paths[name], index=False)
    copied = set(planted["record"])
    memorised = max(1, int(round(MEMORISED_SHARE * rows)))
    outlying = set(train["record"].iloc[most_outlying(train.drop(columns="record"), memorised)])  # the rows memorising_copula copies
    return paths, release_paths, {name: copied if "+20" in name else outlying if "outliers" in name else set() for name in released}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sdv", action="store_true", help="add SDV's GaussianCopula and CTGAN releases (the sdv extra's environment)")
    parser.add_argument(
        "--population-weight", type=float, help="replay the headline with this weight of the distance to the population (0: the tie-break alone)"
    )
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "synthetic_data_decision.json"))
    args = parser.parse_args()
    if args.population_weight is not None:  # the headline's constant, replaced for this process only
        from privaudit.audits.synthetic_data import attacks

        attacks.POPULATION_WEIGHT = max(args.population_weight, 1e-9)
    runs = []
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory() as scratch:
            paths, releases, planted = _releases(Path(scratch), args.rows, seed, sdv=args.sdv)
            for name, path in releases.items():
                config = SyntheticDataConfig(**paths, synthetic=path, id_col="record", categorical=CODES, num_shadows=0, sdmetrics=False, seed=seed)
                started = time.perf_counter()
                result = AUDIT.run(config).result
                decision = result.decision
                named = set(decision.exact_copies) | set(decision.near_copies) if decision.records_exposed else set()
                run = {
                    "seed": seed,
                    "release": name,
                    "seconds": round(time.perf_counter() - started, 1),
                    "records_exposed": decision.records_exposed,
                    "planted": len(planted[name]),
                    "planted_named": len(named & planted[name]),
                    "most_exposed_named": len(decision.most_exposed_ids),  # the 1%-only sentence
                    "planted_most_exposed": len(set(decision.most_exposed_ids) & planted[name]),
                    "exact_copies": len(decision.exact_copies),
                    "non_member_copies": decision.non_member_copies,
                    "copies_p_value": decision.copies_p_value,
                    **{
                        tests.attack: {
                            "above_all": len(tests.found_ids),
                            "above_all_p_value": tests.above_all_p_value,
                            "tpr_at_1pct": tests.tpr_at_1pct,
                            "at_1pct_p_value": tests.at_1pct_p_value,
                        }
                        for tests in decision.attacks
                    },
                    "dcr_passes": bool(result.dcr.passes),
                    "sentence": decision.sentence(),
                }
                runs.append(run)
                print(json.dumps({k: v for k, v in run.items() if k != "sentence"}), flush=True)
    out = {
        "table": "statsmodels fair, codes as categories",
        "rows": args.rows,
        "seeds": args.seeds,
        "population_weight": args.population_weight,
        "runs": runs,
        "versions": library_versions(),
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
