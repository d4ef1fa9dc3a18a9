"""The ε lower bound of a generator from canaries, each inserted by its own fair coin, and its ceiling.

:func:`canary_bound` turns one score per canary (higher = included) into
Steinke, Nasr and Jagielski's one-run bound
(:func:`privaudit.stats.one_run_combined.one_run_lower_bound`, method
``"steinke"`` only: it holds for any (ε, δ)-DP generator, where the
f-DP method would need a Gaussian one). The ceiling is the same test with
every guess right on the same canaries and confidence.

>>> coins = np.random.default_rng(0).random(200) < 0.5
>>> result = canary_bound(coins.astype(float), coins, delta=1e-5, confidence=0.95, claimed=None, canaries="demo", coins_seed=0)
>>> result.bound.epsilon == result.ceiling, result.bound_over_ceiling
(True, 1.0)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ...stats.one_run_combined import one_run_lower_bound
from .types import CanaryBound

__all__ = ["SIGNAL", "canary_bound", "canary_scores"]

SIGNAL = "minus the DCR of each canary to the synthetic table (ranges fixed on the training table and every canary, before the coins)"


def canary_scores(canary_rows: tuple[np.ndarray, np.ndarray], synthetic_rows: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Minus each canary's distance to its closest synthetic row: a kept canary sits near its own trace."""
    from .attacks import dcr_distances

    return -dcr_distances(canary_rows, synthetic_rows)


def canary_bound(scores: Any, included: Any, *, delta: float, confidence: float, claimed: float | None, canaries: str, coins_seed: int) -> CanaryBound:
    """The bound from the canaries' scores and coins, its ceiling, and the claim beside them (both per release)."""
    included = np.asarray(included, dtype=bool)
    bound = one_run_lower_bound(scores, included, delta=delta, confidence=confidence, methods=("steinke",))
    ceiling = _ceiling(included.size, int(included.sum()), float(delta), float(confidence))
    return CanaryBound(
        bound=bound,
        ceiling=ceiling,
        claimed_epsilon=claimed,
        bound_over_claim=None if claimed is None else bound.epsilon / claimed,
        bound_over_ceiling=bound.epsilon / ceiling if ceiling > 0 else None,
        flag=None if claimed is None else bool(bound.epsilon > claimed),
        canaries=canaries,
        coins_seed=coins_seed,
        signal=SIGNAL,
    )


@lru_cache(maxsize=256)
def _ceiling(num_canaries: int, num_in: int, delta: float, confidence: float) -> float:
    """The bound when every guess is right: it depends on the canaries' counts alone (any perfect scores give it)."""
    included = np.arange(num_canaries) < num_in
    return one_run_lower_bound(included.astype(float), included, delta=delta, confidence=confidence, methods=("steinke",)).epsilon
