"""An audit of attack scores the user computed: metrics, ε lower bounds and, for randomised membership, the one-run bound.

The family's face: its ``AUDIT``, config and result, and the public names of its modules
(:mod:`.audit`).
"""

from __future__ import annotations

from .audit import (
    FPR_LEVELS,
    HIGHER,
    LOSS_WORDS,
    LOWER,
    ScoresCurves,
    ScoresResult,
    audit_scores,
    direction_warning,
    names_a_loss,
    score_direction,
    scores_curves,
)

__all__ = [
    "FPR_LEVELS",
    "HIGHER",
    "LOSS_WORDS",
    "LOWER",
    "ScoresCurves",
    "ScoresResult",
    "audit_scores",
    "direction_warning",
    "names_a_loss",
    "score_direction",
    "scores_curves",
]
