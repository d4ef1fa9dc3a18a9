"""The options of ``privaudit audit synthetic-data``."""

from __future__ import annotations

from typing import Optional

from ..claims import family_flags
from .flags import Flag, _import_path, _names, backend_flags, delta_flag, path_flag

__all__ = ["FLAGS"]


def _off(given: bool) -> bool:
    """``--no-sdmetrics`` given: the config's ``sdmetrics`` is false."""
    return not given


FLAGS: tuple[Flag, ...] = (
    path_flag("--train", "Your real training table (.csv or .parquet): categorical string and numeric columns, missing values allowed.", "train"),
    path_flag("--holdout", "Real records of the same population that the generator never saw (.csv or .parquet, the columns of --train).", "holdout"),
    path_flag("--synthetic", "The released synthetic table (no-box; the columns of --train, an --id-col column is ignored).", "synthetic"),
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
    Flag(
        "--categorical",
        Optional[str],
        "Columns read as categories whatever their dtype, comma-separated (integer codes: a party id 0-6, an income bracket 1-24).",
        config="categorical",
        parse=_names,
    ),
    Flag(
        "--numeric",
        Optional[str],
        "Columns read as numbers, comma-separated (whole numbers with few values are numbers unless --categorical).",
        config="numeric",
        parse=_names,
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
    path_flag(
        "--canary-records",
        "Instead of --canaries: your own canaries, a table of --train's columns (.csv or .parquet, >= 10 rows), each included by a fair coin.",
        "canary_records",
    ),
    Flag("--claimed-delta", Optional[float], "The δ of your generator's claim (default: --delta); the bound's --delta must be >= it.", config="claimed_delta"),
    delta_flag("δ of the bound, in (0, 1) (default 1e-5)."),
    *family_flags("your generator (with canaries)"),
    Flag(
        "--no-sdmetrics",
        bool,
        "Skip sdmetrics' own two DCR scores (computed beside privaudit's where sdmetrics is installed; slow on large tables).",
        config="sdmetrics",
        parse=_off,
    ),
    *backend_flags(": where the shadow generators run"),
)
