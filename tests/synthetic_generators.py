"""Generators with the synthetic-data audit's contract, fn(train_df, *, seed, n) -> synthetic_df, for the tests."""

from __future__ import annotations

import os

from privaudit.audits.synthetic_data.generators import gaussian_copula


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
