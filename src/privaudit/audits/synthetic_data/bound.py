"""The ε lower bound of a generator from canaries, each inserted by its own fair coin, and its ceiling.

:func:`canary_bound` turns one score per canary (higher = included) into
Steinke, Nasr and Jagielski's one-run bound
(:func:`privaudit.stats.one_run_combined.one_run_lower_bound`, method
``"steinke"`` only: it holds for any (ε, δ)-DP generator, where the
f-DP method would need a Gaussian one). The ceiling is the same test with
a perfect attack's scores on the same canaries, coins and confidence.

>>> coins = np.random.default_rng(0).random(200) < 0.5
>>> result = canary_bound(coins.astype(float), coins, delta=1e-5, confidence=0.95, claim=None, canaries="demo", coins_seed=0)
>>> 0 < result.bound.epsilon <= result.ceiling
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...stats.ceiling import at_ceiling, one_run_ceiling
from ...stats.one_run_combined import one_run_lower_bound
from ...stats.verdict import Claim, compare
from .attacks import dcr_distances
from .cell_canaries import MARGINAL_SIGNAL, cell_canary_scores, has_binning
from .generation import generate
from .table import Encoder, Table, read_frame
from .types import CanaryBound

__all__ = ["SIGNAL", "binning_power_warning", "canary_bound", "canary_scores", "canary_signal", "generator_bound", "generator_canaries"]

TIE_BREAK = 1e-9  # reorders only scores within 1e-9 of each other: the exact ties of canaries whose own cells the release leaves empty
SIGNAL = "minus the DCR of each canary to the synthetic table (ranges fixed on the training table and every canary, before the coins)"


def canary_scores(canary_rows: tuple[np.ndarray, np.ndarray], synthetic_rows: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Minus each canary's distance to its closest synthetic row: a kept canary sits near its own trace."""
    return -dcr_distances(canary_rows, synthetic_rows)


def canary_signal(function: Any) -> str:
    """The score the bound uses for ``function``'s canaries, fixed before any generation by what the generator states.

    A generator that states its binning (privaudit's dpmm adapters) is scored
    by the marginal attack in its own cells
    (:func:`~privaudit.audits.synthetic_data.cell_canaries.cell_canary_scores`),
    every other by the canary's DCR (:func:`canary_scores`).
    """
    return MARGINAL_SIGNAL if has_binning(function) else SIGNAL


def canary_bound(
    scores: Any, included: Any, *, delta: float, confidence: float, claim: Claim | None, canaries: str, coins_seed: int, signal: str = SIGNAL
) -> CanaryBound:
    """The bound from the canaries' scores and coins, its ceiling, and the verdict on a per-release ``claim``; ``signal`` says how they were scored."""
    included = np.asarray(included, dtype=bool)
    bound = one_run_lower_bound(scores, included, delta=delta, confidence=confidence, methods=("steinke",))
    ceiling = one_run_ceiling(included.size, num_in=int(included.sum()), delta=delta, confidence=confidence, methods=("steinke",))
    return CanaryBound(
        bound=bound,
        ceiling=ceiling,
        at_ceiling=at_ceiling(bound.epsilon, ceiling),
        verdict=None if claim is None else compare(bound.epsilon, bound_delta=delta, quantity="per-release", claim=claim),
        canaries=canaries,
        coins_seed=coins_seed,
        signal=signal,
    )


def binning_power_warning(function: Any, train: Any, canaries: Any) -> str | None:
    """One warning when canaries have no one-way cell of their own in the generator's binning (a generator with ``marginal_cells``), else None.

    A marginal-based generator (MST, AIM, PrivBayes) keeps of a record only
    its counts in the cells it measures. A canary whose every value falls in a
    cell that training rows already fill moves those counts by one, which the
    noise hides: the bound can hardly see it. The domain is read from the
    training table and every canary, as the generator reads it when all are in.
    """
    cells_of = getattr(function, "marginal_cells", None)
    if not callable(cells_of):
        return None
    import pandas as pd  # optional (the parquet extra)

    both = pd.concat([train, canaries], ignore_index=True)
    filled = cells_of(both, train)
    theirs = cells_of(both, canaries)
    own = np.array([any(theirs[i, j] not in set(filled[:, j].tolist()) for j in range(theirs.shape[1])) for i in range(theirs.shape[0])])
    without = int((~own).sum())
    if without == 0:
        return None
    bins = getattr(function, "bins", None)
    binning = f"{bins} bins per numeric column on its domain" if bins is not None else "its domain"
    return (
        f"{without} of {len(canaries)} canaries have no one-way cell of their own in the generator's binning ({binning}): a marginal-based generator "
        "keeps such a canary only as one more count in cells training rows already fill, so the bound can hardly see it; declare bounds whose "
        "bins the training table leaves empty and give --canary-records with values there"
    )


def generator_canaries(function: Any, train: Table, canaries: Any, *, coins_seed: int, release_seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(one score per canary, its coin): each of ``canaries`` (a frame of ``train``'s schema) included by its own fair coin, one generation of ``n`` rows.

    The score is :func:`canary_signal`'s: the marginal attack in the
    generator's own cells when it states its binning, else minus the DCR.
    """
    import pandas as pd  # optional (the parquet extra)

    m = len(canaries)
    included = np.random.default_rng(coins_seed).random(m) < 0.5
    if included.sum() < 2 or (~included).sum() < 2:
        raise ValueError(f"`--canaries` {m}: the coins left fewer than 2 canaries on a side; use more canaries or another --seed")
    data = pd.concat([train.frame, canaries[included]], ignore_index=True)
    # n fixed before the coins: a row count that grew with the included canaries would itself tell them
    synthetic = generate(function, data, train, seed=release_seed, n=n)
    if has_binning(function):
        scores = cell_canary_scores(function, train.frame, canaries, synthetic.frame)
        # the canaries whose own cells the release leaves empty all score 0: a tie the guesses may not split, so it is broken at random, by a
        # stream of the release's seed (independent of the coins)
        return scores + TIE_BREAK * np.random.default_rng([release_seed, 1]).random(m), included
    fixed = Encoder.fit(Table(pd.concat([train.frame, canaries], ignore_index=True), np.zeros(0), train.schema))  # ranges before the coins
    return canary_scores(fixed.dcr_arrays(read_frame(canaries, "the canaries")), fixed.dcr_arrays(synthetic)), included


def generator_bound(
    function: Any,
    train: Table,
    canaries: Any,
    *,
    coins_seed: int,
    release_seed: int,
    n: int,
    delta: float,
    confidence: float,
    claim: Claim | None,
    canaries_how: str,
) -> CanaryBound:
    """:func:`generator_canaries`, then :func:`canary_bound` of their scores and coins."""
    scores, included = generator_canaries(function, train, canaries, coins_seed=coins_seed, release_seed=release_seed, n=n)
    return canary_bound(
        scores, included, delta=delta, confidence=confidence, claim=claim, canaries=canaries_how, coins_seed=coins_seed, signal=canary_signal(function)
    )
