"""What ran, held against the user's claim: the σ that ran below the least σ the claim allows flags the run, with its cause.

A one-run bound below the claim does not clear a run whose noise could never
meet it: a black-box bound from one run is weak, and σ/10 after
``make_private`` can leave it at 0. What ran is known in two cases:

* privaudit's own DP-SGD ran the config's σ, q and T;
* the user's ``--train`` function reported its Opacus optimizer and
  accountant (:func:`privaudit.integrations.observed.report_opacus`), so σ,
  q and T were read from them (``model.observed`` in the result).

Then a σ below σ_min, the least noise whose T Poisson-subsampled steps at
rate q meet the claimed (ε, δ) (:func:`privaudit.stats.dpsgd_claims.noise_shortfall`),
is a finding that flags the run. Settings typed beside a ``--train``
function that reported nothing are what the user believes ran, or the
config's defaults: below σ_min they get a warning, which flags nothing.

>>> from privaudit.audits.one_run.config import OneRunAuditConfig
>>> from privaudit.stats.verdict import Claim
>>> findings, warnings, computed = noise_evidence(OneRunAuditConfig(num_steps=1, noise_multiplier=0.1), Claim(4.0, 1e-5), None)
>>> findings[0][:60], warnings, computed
("σ observed 0.1 (the noise_multiplier privaudit's DP-SGD ran)", (), False)
"""

from __future__ import annotations

from typing import Any

from ...stats.dpsgd_claims import noise_shortfall
from ...stats.verdict import Claim
from .config import OneRunAuditConfig

__all__ = ["noise_evidence", "observed_settings"]

_OWN = ("the noise_multiplier privaudit's DP-SGD ran", "the config's noise_multiplier is below what the claim needs")
_REPORTED = ("the optimizer's noise_multiplier, reported by --train through report_opacus", "lowered after make_private, or a claim its settings never met")


def observed_settings(seen: list[Any]) -> dict[str, Any] | None:
    """σ, q and T of the one Opacus run a ``--train`` function reported (None when it reported none)."""
    if not seen:
        return None
    ran = seen[0]
    return {"noise_multiplier": float(ran.noise_multiplier), "sampling_rate": float(ran.sample_rate), "num_steps": int(ran.steps)}


def noise_evidence(config: OneRunAuditConfig, claim: Claim | None, observed: dict[str, Any] | None) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """(findings, warnings, whether σ meets the claim) of the σ that ran against the user's ``claim``.

    ``observed``: what a ``--train`` function reported (:func:`observed_settings`).
    Without a claim nothing is checked. The accountant's ε is worth
    computing only when σ meets the claim: below σ_min the finding says it
    all, and the PLD of so little noise can take minutes.
    """
    if claim is None:
        return (), (), True
    if config.train is None or observed is not None:
        settings = (
            (config.noise_multiplier, config.sampling_rate, config.num_steps)
            if observed is None
            else (observed["noise_multiplier"], observed["sampling_rate"], observed["num_steps"])
        )
        read_from, far_cause = _OWN if config.train is None else _REPORTED
        _, finding = noise_shortfall(settings[0], claim, sampling_prob=settings[1], num_steps=settings[2], read_from=read_from, far_cause=far_cause)
        return ((finding,) if finding else ()), (), finding is None
    sigma_min, shortfall = noise_shortfall(config.noise_multiplier, claim, sampling_prob=config.sampling_rate, num_steps=config.num_steps)
    if shortfall is None:
        return (), (), True
    warning = (
        f"the σ typed for --train ({config.noise_multiplier:g}; as given, not observed) is below the σ ≥ {sigma_min:.4g} that ε = {claim.epsilon:g} "
        f"at δ = {claim.delta:g} with q = {config.sampling_rate:.4g} and T = {config.num_steps} implies: if your function ran it, the claim cannot hold. "
        "Not flagged, as nothing observed what ran: call report_opacus(optimizer, accountant=...) at the end of your function"
    )
    return (), (warning,), False
