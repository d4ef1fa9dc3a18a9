"""Generators with the synthetic-data audit's contract, fn(train_df, *, seed, n) -> synthetic_df, for the tests."""

from __future__ import annotations

import os

from privaudit.audits.synthetic_data.generators import gaussian_copula
from privaudit.audits.synthetic_data.smartnoise_generators import smartnoise_mst


def _log_call(train_df, n) -> None:
    log = os.environ.get("SYNTHETIC_CALL_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"{len(train_df)} {n}\n")


def wrong_columns(train_df, *, seed, n):
    """Drops the training table's last column."""
    _log_call(train_df, n)
    return gaussian_copula(train_df, seed=seed, n=n).iloc[:, :-1]


def copying(train_df, *, seed, n):
    """Releases the training rows themselves: every one when n allows (the rest resampled), else n of them: no privacy at all."""
    import pandas as pd

    _log_call(train_df, n)
    if n < len(train_df):
        return train_df.sample(n=n, random_state=seed).reset_index(drop=True)
    return pd.concat([train_df, train_df.sample(n=n - len(train_df), replace=True, random_state=seed)], ignore_index=True)


def counting_copula(train_df, *, seed, n):
    """The built-in Gaussian copula, each call logged to $SYNTHETIC_CALL_LOG."""
    _log_call(train_df, n)
    return gaussian_copula(train_df, seed=seed, n=n)


def noisy_copies_20pct(train_df, *, seed, n):
    """The built-in copula's rows, 5% of them replaced by the most outlying training rows with Gaussian noise of 20% of each number's deviation
    (whole numbers rounded, categories kept): near copies that small noise no longer puts at distance about 0."""
    from privaudit.audits.synthetic_data.generators import memorising_copula

    return memorising_copula(train_df, seed=seed, n=n, near=True, noise=0.2, change_category=False)


class NoisyMarginals:
    """Every one-way marginal on a dpmm-like binning with Gaussian noise of sd ``sigma`` on each count, the columns then sampled independently.

    One record added or removed moves one count per column by 1, so the
    release is μ-GDP with μ = √(columns) / σ (σ = 0: no privacy). Each cell is
    sampled at the value :meth:`cell_values` gives it. The binning is that of
    privaudit's dpmm adapter (its cells only: dpmm itself is never called), so
    the audit uses its cell canaries and marginal attack. ``copy=True``
    releases the training rows instead (every one when n allows).
    """

    def __init__(self, sigma, *, bins, bounds, categories=None, copy=False):
        from privaudit.audits.synthetic_data.dpmm_generators import mst

        self.sigma, self.copy = float(sigma), copy
        self.binning = mst(1.0, bins=bins, bounds=bounds, categories=categories)

    def marginal_cells(self, train_df, frame):
        return self.binning.marginal_cells(train_df, frame)

    def cell_values(self, train_df):
        return self.binning.cell_values(train_df)

    def __call__(self, train_df, *, seed, n):
        import numpy as np
        import pandas as pd

        _log_call(train_df, n)
        if self.copy:
            return copying(train_df, seed=seed, n=n)
        rng = np.random.default_rng(seed)
        cells = self.marginal_cells(train_df, train_df)
        columns = {}
        for j, (column, pairs) in enumerate(self.cell_values(train_df).items()):
            counts = np.array([np.sum(cells[:, j] == cell) for cell, _ in pairs], dtype=float)
            noisy = np.clip(counts + self.sigma * rng.standard_normal(len(pairs)), 0.0, None)
            p = noisy / noisy.sum() if noisy.sum() > 0 else np.full(len(pairs), 1.0 / len(pairs))
            columns[column] = np.array([pairs[i][1] for i in rng.choice(len(pairs), size=n, p=p)], dtype=object)
        return pd.DataFrame(columns).astype(train_df.dtypes.to_dict())


# for the audit's tests: two numbers on [0, 100] in 25 bins (the training table fills [0, 40)) and a category, declared
MARGINAL_DOMAIN = {"bins": 25, "bounds": {"age": (0.0, 100.0), "income": (0.0, 100.0)}, "categories": {"plan": ["basic", "plus", "gold"]}}
noise_free_marginals = NoisyMarginals(0.0, **MARGINAL_DOMAIN)
binned_copying = NoisyMarginals(0.0, copy=True, **MARGINAL_DOMAIN)

# smartnoise-synth's MST on the same declared domain (the smartnoise extra's environment): run far above a claim of 1, and at it
smartnoise_mst_1e4 = smartnoise_mst(1e4, **MARGINAL_DOMAIN)
smartnoise_mst_1 = smartnoise_mst(1.0, **MARGINAL_DOMAIN)
