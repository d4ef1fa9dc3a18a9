"""``--claimed-epsilon`` and ``--claimed-delta``: the one spelling of a user's claim on every command that bounds ε.

The claim is the user's (never read from the model or the config's DP
settings, which are evidence); with none, the command reports the bound and
says "no claim given". The verdict compares like with like
(:mod:`privaudit.stats.verdict`).
"""

from __future__ import annotations

from typing import Any, Optional

from .flag_names import Flag

__all__ = ["claim_flags", "family_flags"]


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


def family_flags(what: str) -> tuple[Any, ...]:
    """``--family``, ``--family-claim``, ``--family-sampling-rate``, ``--family-steps``: the claim's own family (:mod:`privaudit.audits.family_test`), one spelling on every one-run command."""
    return (
        Flag(
            "--family",
            Optional[str],
            f"The mechanism {what} claims to be: gdp, subsampled-gaussian, dpsgd, laplace or generic. The headline becomes the order-statistics "
            "test against that family (it names the null it refuted), the generic bound beside it; default: the generic bound alone.",
            config="family",
        ),
        Flag(
            "--family-claim",
            Optional[float],
            "With --family: the family parameter the claim states, in (0, inf): mu for gdp, sigma for subsampled-gaussian/dpsgd, epsilon for laplace/generic.",
            config="family_claim",
        ),
        Flag(
            "--family-sampling-rate",
            Optional[float],
            "With --family subsampled-gaussian or dpsgd: each canary's Poisson sampling rate q per step, in (0, 1].",
            config="family_sampling_rate",
        ),
        Flag("--family-steps", Optional[int], "With --family dpsgd: the number of steps T, an integer >= 1.", config="family_steps"),
    )
