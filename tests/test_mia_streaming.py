"""Signals cached on disk and attacks streamed over chunks of records: the same scores as the whole-array attacks, in bounded memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from privaudit.runner import RunStore, run_all
from privaudit.stats.mia import lira_offline_scores, lira_online_scores, rmia_scores
from privaudit.stats.mia_stream import lira_scores_streamed, rmia_scores_streamed, working_bytes


def setting(seed, k=8, n=300):
    """Signals of n records on a target and k references (each record IN half of them), records x and population samples z."""
    rng = np.random.default_rng(seed)
    membership = np.argsort(rng.random((n, k)), axis=1).T < k // 2
    reference = rng.normal(size=(k, n)) * rng.uniform(0.5, 2.0, size=n) + rng.normal(1.0, 0.5, size=n) * membership
    target = rng.normal(size=n) + rng.random(n)
    population = np.sort(rng.choice(n, size=n // 4, replace=False))
    records = np.setdiff1d(np.arange(n), population)
    return target, reference, membership, records, population


def whole(name, target, reference, membership, records, population):
    """The whole-array attack of privaudit.stats.mia on the records x, z from the population."""
    x = (target[records], reference[:, records], membership[:, records])
    if name.startswith("rmia"):
        z = (target[population], reference[:, population], membership[:, population])
        return rmia_scores(*x, *z, offline_a=0.3 if name == "rmia-offline" else None, gamma=1.5)
    attack = lira_online_scores if name.startswith("lira-online") else lira_offline_scores
    return attack(*x, global_variance=name.endswith("global"))


def streamed(name, target, reference, membership, records, population, chunk):
    if name.startswith("rmia"):
        offline_a = 0.3 if name == "rmia-offline" else None
        return rmia_scores_streamed(target, reference, membership, population=population, records=records, gamma=1.5, offline_a=offline_a, chunk_records=chunk)
    online, global_variance = name.startswith("lira-online"), name.endswith("global")
    return lira_scores_streamed(target, reference, membership, online=online, global_variance=global_variance, records=records, chunk_records=chunk)


ATTACKS = ("lira-online", "lira-online-global", "lira-offline", "lira-offline-global", "rmia-online", "rmia-offline")


@pytest.mark.parametrize("name", ATTACKS)
@pytest.mark.parametrize("seed", [0, 1])
def test_chunked_scores_equal_the_whole_array_attack(name, seed):
    data = setting(seed)
    expected = whole(name, *data)
    # chunks of 1 and 7 records, one that does not divide the records, and one chunk of all: to 1e-12
    for chunk in (1, 7, 64, 10_000):
        np.testing.assert_allclose(streamed(name, *data, chunk=chunk), expected, rtol=1e-12, atol=1e-12)


def test_rows_memory_mapped_from_the_run_store_give_the_same_scores(tmp_path):
    target, reference, membership, records, population = setting(3)
    store = RunStore(tmp_path)
    for index, row in enumerate(reference):
        store.save(index, {"signals": row, "seed": index})
    rows = [store.load(index)["signals"] for index in range(len(reference))]
    assert all(isinstance(row, np.memmap) and not row.flags.writeable for row in rows)
    for name in ("lira-online-global", "rmia-online"):
        assert np.array_equal(
            streamed(name, target, rows, membership, records, population, 50), streamed(name, target, reference, membership, records, population, 50)
        )


def test_chunk_size_bounds_the_peak_allocation():
    k, n, chunk = 64, 20_000, 256
    target, reference, membership, records, population = setting(5, k=k, n=n)
    # what grows with the records: 1-D vectors of 8 bytes per record (scores, indices, population ratios), a few of them
    budget = working_bytes(k, chunk) + 4 * 8 * n
    for name in ATTACKS:
        tracemalloc.start()
        try:
            streamed(name, target, reference, membership, records, population, chunk)
            streamed_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            whole(name, target, reference, membership, records, population)
            whole_peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert streamed_peak <= budget, (name, streamed_peak, budget)
        # the whole-array attack holds (k, n) copies: the bound is not loose enough to hold for it
        assert whole_peak > 3 * budget, (name, whole_peak, budget)


def test_bad_rows_and_indices_are_refused_naming_the_argument():
    target, reference, membership, records, population = setting(0)
    with pytest.raises(ValueError, match="`reference_signals` must be \\(references, records\\) with 300 records"):
        lira_scores_streamed(target, reference[:, :-1], membership, online=True)
    with pytest.raises(ValueError, match="`records` must be record indices in \\[0, 299\\]"):
        lira_scores_streamed(target, reference, membership, online=True, records=[0, 300])
    with pytest.raises(ValueError, match="`chunk_records` must be"):
        rmia_scores_streamed(target, reference, membership, population=population, chunk_records=0)
    reference = reference.copy()
    reference[2, 123] = np.nan
    with pytest.raises(ValueError, match="in the chunk of records 100 to 149"):
        lira_scores_streamed(target, reference, membership, online=True, chunk_records=50)


def signals_task(config: dict) -> dict:
    """A job that returns its signals as a numpy array, as the mia audit's jobs do."""
    rng = np.random.default_rng(np.random.SeedSequence((config["seed"], config["index"])))
    return {"index": config["index"], "signals": rng.normal(size=5)}


def test_arrays_of_results_are_kept_as_npy_files_and_checked(tmp_path):
    configs = [{"index": index, "seed": 2} for index in range(3)]
    results = run_all(signals_task, configs, store=RunStore(tmp_path), max_workers=1)
    for config, result in zip(configs, results, strict=True):
        assert np.array_equal(result["signals"], signals_task(config)["signals"]) and result["signals"].dtype == np.float64
    assert sorted(path.name for path in tmp_path.glob("*.npy")) == [f"run-{index:06d}.signals.npy" for index in range(3)]
    # a changed array file is refused, not read
    np.save(tmp_path / "run-000001.signals.npy", np.zeros(5))
    with pytest.raises(ValueError, match="run 1's array file .* has changed since it was saved; delete run-000001.json"):
        RunStore(tmp_path).load(1)
    (tmp_path / "run-000002.signals.npy").unlink()
    with pytest.raises(ValueError, match="run 2's array file .* is missing"):
        RunStore(tmp_path).load(2)
    with pytest.raises(ValueError, match="an array's key must be"):
        RunStore(tmp_path).save(4, {"../x": np.zeros(2)})


# --- an ordering that must hold: online LiRA beats offline where the IN signal is a narrow band inside the OUT one -----
#
# Record x's signal on a model is b_x + N(0, 1) when x is OUT and b_x + N(MU, SPREAD²) when IN (b_x a fixed difficulty).
# The offline test thresholds the signal, and the IN mass above OUT's 99th percentile is nearly nothing; the
# likelihood ratio that online LiRA estimates keeps a band around MU instead (Neyman–Pearson), which holds far more.
MU, SPREAD, FPR = 1.0, 0.2, 0.01


def closed_form_tpr(online):
    """TPR at FPR of the exact tests with known Gaussians: a threshold on the signal (offline) or on the likelihood ratio (online)."""
    from scipy import optimize, stats

    if not online:
        return float(stats.norm.sf(stats.norm.isf(FPR), MU, SPREAD))
    # log LR = a s² + b s + c with a < 0: the region {log LR >= t} is an interval around its peak
    a, b = 0.5 - 1 / (2 * SPREAD**2), MU / SPREAD**2
    peak = -b / (2 * a)

    def interval(width):
        return peak - width, peak + width  # symmetric: log LR is a parabola

    width = optimize.brentq(lambda w: stats.norm.cdf(interval(w)[1]) - stats.norm.cdf(interval(w)[0]) - FPR, 1e-9, 10.0)
    low, high = interval(width)
    return float(stats.norm.cdf(high, MU, SPREAD) - stats.norm.cdf(low, MU, SPREAD))


@pytest.mark.parametrize("references", [16, 32])
def test_online_lira_beats_offline_at_16_and_32_references(references, seed=None):  # any seed: None draws a fresh one
    from privaudit.stats.metrics import tpr_at_fpr

    rng = np.random.default_rng(seed)
    n = 20_000
    difficulty = rng.normal(0.0, 3.0, size=n)
    membership = np.stack([rng.permutation(references) < references // 2 for _ in range(n)], axis=1)
    reference = difficulty + np.where(membership, MU + SPREAD * rng.normal(size=membership.shape), rng.normal(size=membership.shape))
    is_member = rng.random(n) < 0.5
    target = difficulty + np.where(is_member, MU + SPREAD * rng.normal(size=n), rng.normal(size=n))

    def tpr(online):
        scores = lira_scores_streamed(target, reference, membership, online=online, global_variance=True, chunk_records=4096)
        return float(tpr_at_fpr(scores[is_member], scores[~is_member], FPR)[0])

    best, threshold_only = closed_form_tpr(online=True), closed_form_tpr(online=False)
    assert best > 20 * threshold_only + 0.05  # the closed forms: the band holds far more than the tail
    error = np.sqrt(best * (1 - best) / is_member.sum())  # binomial sd of a TPR near the optimum
    online, offline = tpr(online=True), tpr(online=False)
    assert online > offline + 6 * error, (online, offline, best, threshold_only)
    # and neither beats the exact likelihood-ratio test by more than its sampling error
    assert max(online, offline) <= best + 6 * error
