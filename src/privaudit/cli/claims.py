"""``--claimed-epsilon`` and ``--claimed-delta``: the one spelling of a user's claim on every command that bounds ε.

The claim is the user's (never read from the model or the config's DP
settings, which are evidence); with none, the command reports the bound and
says "no claim given". The verdict compares like with like
(:mod:`privaudit.stats.verdict`).
"""

from __future__ import annotations

from typing import Any, Optional

from .flag_names import Flag

__all__ = ["claim_flags"]


def claim_flags(what: str, *, quantity: str = "end to end") -> tuple[Any, ...]:
    """The two claim options of a family, overriding its config's ``claimed_epsilon`` and ``claimed_delta``."""
    return (
        Flag(
            "--claimed-epsilon",
            Optional[float],
            f"The ε that {what} claims ({quantity}), in (0, inf): the bound is compared with it, like for like, and flagged when it exceeds it. "
            "Without it there is no verdict.",
            config="claimed_epsilon",
        ),
        Flag(
            "--claimed-delta",
            Optional[float],
            "The δ of --claimed-epsilon's claim, in [0, 1) (default: the audit's δ). A bound at a δ below the claim's is not compared.",
            config="claimed_delta",
        ),
    )
