"""The options of ``privaudit audit synthetic-data``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .flags import Flag, _import_path

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag(
        "--train",
        Optional[Path],
        "Your real training table (.csv or .parquet): categorical string and numeric columns, missing values allowed.",
        config="train",
        parse=str,
    ),
    Flag(
        "--holdout",
        Optional[Path],
        "Real records of the same population that the generator never saw (.csv or .parquet, the columns of --train).",
        config="holdout",
        parse=str,
    ),
    Flag(
        "--synthetic",
        Optional[Path],
        "The released synthetic table (no-box; the columns of --train, an --id-col column is ignored).",
        config="synthetic",
        parse=str,
    ),
    Flag(
        "--generator",
        Optional[str],
        "Instead of --synthetic: your generator package.module:fn, fn(train_df, *, seed, n) -> synthetic_df; it makes the release, "
        "the shadow releases and the canary run.",
        config="generator",
        parse=_import_path("--generator"),
    ),
    Flag(
        "--id-col",
        Optional[str],
        "A column of --train and --holdout holding each record's id (any text; not a feature, never given to the generator).",
        config="id_col",
    ),
    Flag("--num-synthetic", Optional[int], "Rows your generator makes (>= 10; default: as many as --train).", config="num_synthetic"),
    Flag(
        "--reference-fraction",
        Optional[float],
        "Share of --holdout that is the attacker's population sample, in (0, 1) (default 0.5); the rest are the evaluation non-members.",
        config="reference_fraction",
    ),
    Flag("--shadows", Optional[int], "Shadow releases per shadow target (0, or even >= 4; default 8), with --generator.", config="num_shadows"),
    Flag("--shadow-targets", Optional[int], "Records the shadow attack targets, the most outlying first (>= 2; default 6).", config="num_shadow_targets"),
    Flag(
        "--canaries",
        Optional[int],
        "Canaries of the ε lower bound (0: none, else >= 10), each inserted by a fair coin, with --generator.",
        config="num_canaries",
    ),
    Flag(
        "--claimed-epsilon",
        Optional[float],
        "The ε your generator claims per release, compared with the bound (flagged if the bound exceeds it).",
        config="claimed_epsilon",
    ),
    Flag(
        "--canary-records",
        Optional[Path],
        "Instead of --canaries: your own canaries, a table of --train's columns (.csv or .parquet, >= 10 rows), each included by a fair coin.",
        config="canary_records",
        parse=str,
    ),
    Flag("--claimed-delta", Optional[float], "The δ of your generator's claim (default: --delta); the bound's --delta must be >= it.", config="claimed_delta"),
    Flag("--delta", Optional[float], "δ of the bound, in (0, 1) (default 1e-5).", config="delta"),
    Flag("--backend", str, "local (process pool) or ray: where the shadow generators run.", run="backend"),
    Flag("--address", Optional[str], "Ray cluster address, e.g. auto or ray://host:10001 (with --backend ray).", run="address"),
    Flag("--workers", Optional[int], "Worker processes (local) or CPUs of a new local Ray instance; default: all cores.", run="max_workers"),
)
