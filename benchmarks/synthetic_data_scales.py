"""Copies found at 1% FPR by the robust DCR under three column scales, beside DCR-as-a-score: ``python benchmarks/synthetic_data_scales.py TABLE GENERATOR SEEDS [--weights W,...]``.

TABLE: breast-cancer or diabetes (scikit-learn's, halves) or fair
(statsmodels' survey, 3,000 training and 3,000 holdout rows). GENERATOR:
copies (the memorising copula), near (the near-copy copula: noise of 5% of
each numeric column's deviation, one category changed) or near20 (noise of
20%, categories kept) or clean (privaudit's copula). SEEDS: comma-separated. Scales: ``iqr`` (the
population's IQR alone, the headline before the point-mass fallback),
``nonmodal`` (the larger of the IQR and the IQR of the values other than a
value that holds >= 25% of the column: ``Encoder.robust_scale``), ``wide``
(the larger of the IQR and the inter-decile range over 2.56). Prints the
copied records found at 1% FPR, summed over the seeds, and the seeds where
each scale found fewer than DCR-as-a-score.

``--weights`` replays the choice of the headline's population weight β
(``attacks.POPULATION_WEIGHT``): on the headline's scales, minus the distance
to the closest synthetic row plus β x the distance to the population, for
each β (0: the tie-break alone, at 1e-9), beside DCR as a score. It prints,
summed over the seeds, the copied records found at 1% FPR (``found``), every
member above that threshold (``members``; for ``clean`` the only count), and
the seeds where β found fewer copied records than DCR as a score.
"""

import json
import sys

import numpy as np
import pandas as pd

from privaudit.audits.synthetic_data.attacks import dcr_distances, robust_dcr_scores
from privaudit.audits.synthetic_data.generators import MEMORISED_SHARE, gaussian_copula, memorising_copula, most_outlying, near_copy_copula
from privaudit.audits.synthetic_data.table import Encoder, Table, read_frame
from privaudit.data.tabular import mixed_table


def fair():
    from statsmodels.datasets import fair as f

    frame = f.load_pandas().data
    frame.insert(0, "record", [f"R-{i:06d}" for i in range(len(frame))])
    return frame


def scale_iqr(values):
    q = np.nanpercentile(values, [25, 75], axis=0)
    iqr = q[1] - q[0]
    spread = np.nanmax(values, axis=0) - np.nanmin(values, axis=0)
    return np.where(iqr > 0, iqr, np.where(spread > 0, spread, 1.0))


def scale_nonmodal(values, share=0.25):
    """IQR, but where one value holds >= `share` of the column, the IQR of the other values (the point mass left out)."""
    out = scale_iqr(values).copy()
    for j in range(values.shape[1]):
        v = values[:, j][~np.isnan(values[:, j])]
        if v.size == 0:
            continue
        u, c = np.unique(v, return_counts=True)
        if c.max() / v.size >= share:
            rest = v[v != u[np.argmax(c)]]
            if rest.size >= 4:
                q = np.percentile(rest, [25, 75])
                r = q[1] - q[0]
                if r > out[j]:
                    out[j] = r
    return out


def scale_wide(values):
    """max(IQR, (q90 - q10) / 2.56): an inter-decile range on the IQR's units where a point mass squeezes the quartiles."""
    q = np.nanpercentile(values, [10, 90], axis=0)
    return np.maximum(scale_iqr(values), (q[1] - q[0]) / 2.5631)


SCALES = {"iqr": scale_iqr, "nonmodal": scale_nonmodal, "wide": scale_wide}


def found_at_1pct(scores, member, flagged):
    out = np.sort(scores[~member])[::-1]
    thr = out[int(np.floor(0.01 * len(out)))]
    return int(np.sum((scores[member] > thr)[flagged]))


def one(table, seed, gen, weights=None):
    frame = fair() if table == "fair" else mixed_table(table)
    order = np.random.default_rng(seed).permutation(len(frame))
    half = len(frame) // 2
    if table == "fair":
        half = 3000
    tr = frame.iloc[np.sort(order[:half])].reset_index(drop=True)
    ho = frame.iloc[np.sort(order[half : 2 * half])].reset_index(drop=True)
    train, holdout = read_frame(tr, "--train", id_col="record"), read_frame(ho, "--holdout", id_col="record")
    if gen == "near20":
        rel_df = memorising_copula(train.frame, seed=seed, n=len(train), near=True, noise=0.2, change_category=False)
    elif gen == "clean":
        rel_df = gaussian_copula(train.frame, seed=seed, n=len(train))
    else:
        fn = memorising_copula if gen == "copies" else near_copy_copula
        rel_df = fn(train.frame, seed=seed, n=len(train))
    released = read_frame(rel_df, "--synthetic")
    cut = len(holdout) // 2
    o2 = np.random.default_rng(seed + 1000).permutation(len(holdout))
    ref_rows, out_rows = np.sort(o2[:cut]), np.sort(o2[cut:])
    sub = lambda t, rows: Table(t.frame.iloc[rows].reset_index(drop=True), t.ids[rows], t.schema)
    reference, outside = sub(holdout, ref_rows), sub(holdout, out_rows)
    encoder = Encoder.fit(train, holdout, released)
    records = Table(pd.concat([train.frame, outside.frame], ignore_index=True), np.concatenate([train.ids, outside.ids]), train.schema)
    member = np.arange(len(records)) < len(train)
    flagged = np.zeros(len(train), dtype=bool)
    flagged[most_outlying(train.frame, max(1, int(round(MEMORISED_SHARE * len(train)))))] = True
    res = {"copied": int(flagged.sum())}
    everyone = np.ones(len(train), dtype=bool)
    dcr = -dcr_distances(encoder.dcr_arrays(records), encoder.dcr_arrays(released))
    if weights is not None:  # the headline's scales; the weight of the distance to the population varied
        robust = encoder.robust_scale(reference)
        ra = encoder.dcr_arrays(records, robust)
        closest, to_population = dcr_distances(ra, encoder.dcr_arrays(released, robust)), dcr_distances(ra, encoder.dcr_arrays(reference, robust))
        for weight in weights:
            scores = -closest + max(weight, 1e-9) * to_population
            res[f"found beta={weight:g}"], res[f"members beta={weight:g}"] = found_at_1pct(scores, member, flagged), found_at_1pct(scores, member, everyone)
        res["found dcr"], res["members dcr"] = found_at_1pct(dcr, member, flagged), found_at_1pct(dcr, member, everyone)
        return res
    values = reference.frame[list(encoder.numeric)].to_numpy(dtype=float)
    for name, fn_s in SCALES.items():
        robust = fn_s(values)
        ra, sa = encoder.dcr_arrays(records, robust), encoder.dcr_arrays(released, robust)
        sc = robust_dcr_scores(ra, sa, encoder.dcr_arrays(reference, robust))
        res[name] = found_at_1pct(sc, member, flagged)
    res["dcr"] = found_at_1pct(dcr, member, flagged)
    return res


if __name__ == "__main__":
    table, gen, seeds = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3].split(",")]
    weights = [float(w) for w in sys.argv[sys.argv.index("--weights") + 1].split(",")] if "--weights" in sys.argv else None
    rows = [one(table, s, gen, weights) for s in seeds]
    tot = {k: sum(r[k] for r in rows) for k in rows[0]}
    if weights is None:
        worse = {k: sum(r[k] < r["dcr"] for r in rows) for k in SCALES}
    else:
        worse = {f"beta={w:g}": sum(r[f"found beta={w:g}"] < r["found dcr"] for r in rows) for w in weights}
    print(json.dumps({"table": table, "generator": gen, "seeds": len(seeds), "total": tot, "seeds_below_dcr": worse}))
