"""The options of ``privaudit audit mechanism``."""

from __future__ import annotations

from typing import Optional

from .flags import Flag, _domain, _import_path, delta_flag, path_flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag(
        "--mechanism",
        Optional[str],
        "The mechanism under test: package.module:fn with fn(dataset, size, rng) -> size outputs (scalars, vectors or tables) on one dataset, "
        "every random draw from rng (a numpy Generator), in one vectorised call. Imported from the current directory or the Python path.",
        config="mechanism",
        parse=_import_path("--mechanism"),
    ),
    path_flag("--dataset", "D: a .npy or .csv of records, one per row (default: the built-in example's).", "dataset"),
    path_flag("--neighbour", "D': a .npy or .csv differing from D in one record (default: searched on pilot samples).", "neighbour"),
    Flag("--relation", Optional[str], "Neighbouring relation of the claim when D' is searched: add-remove or replace.", config="relation"),
    Flag(
        "--domain",
        Optional[str],
        "LOW,HIGH: the range of a record's fields that the search draws records from (default: the mechanism's `domain` attribute, "
        "else the dataset's range widened by its width on each side, so that a forgotten clip shows).",
        config="domain",
        parse=_domain,
    ),
    Flag("--search-steps", Optional[int], "Local-search moves from the best pair found (0: candidates only).", config="search_steps"),
    Flag("--epsilon", Optional[float], "Claimed epsilon (> 0); default: the mechanism's own `claim` attribute.", config="epsilon"),
    delta_flag("Claimed delta, in [0, 1) (0: pure DP)."),
    Flag("--claimed-epsilon", Optional[float], "The same as --epsilon, the spelling every other command uses.", config="epsilon"),
    Flag("--claimed-delta", Optional[float], "The same as --delta, the spelling every other command uses.", config="delta"),
    Flag("--rho", Optional[float], "A rho-zCDP claim instead of --epsilon, tested as (epsilon, delta)-DP at --delta.", config="rho"),
    Flag("--samples", Optional[int], "Held-out samples per dataset, bounded.", config="samples"),
    Flag("--pilot-samples", Optional[int], "Pilot samples per dataset, for the statistics and thresholds.", config="pilot_samples"),
    Flag(
        "--stages",
        Optional[int],
        "Sequential mode: draw the held-out samples in this many looks and stop at the first rejection (error spent equally on the looks).",
        config="stages",
    ),
)
