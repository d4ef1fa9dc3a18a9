"""The verdict of an Opacus audit: the user's claim, the settings read as evidence, and the two like-for-like comparisons.

The claim is the user's (``claimed_epsilon``, ``claimed_delta``), never the
optimizer's: σ, q and the step count read from the user's optimizer, data
loader and accountant are *evidence*. They are recorded, and checked against
what the claim implies:

* every σ the optimizer used must be at least σ_min, the least noise with
  which the run's T steps at rate q can meet the claim
  (:func:`privaudit.stats.dpsgd_claims.least_noise_for_claim`). A σ below it
  (``optimizer.noise_multiplier /= 10`` after ``make_private``) is a finding,
  and flags the run, whatever the canaries show;
* Opacus' own accountant, where given, must report at most the claimed ε.

The per-step bound is then held against the claim converted to one step,
and its end-to-end conversion against the claim itself
(:func:`~privaudit.stats.dpsgd_claims.step_and_end_verdicts`).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from .._core.results import Result
from ..stats.dpsgd_claims import end_to_end_from_step, least_noise_for_claim, noise_shortfall, step_and_end_verdicts
from ..stats.one_run_nulls import DPSGD
from ..stats.verdict import Claim, Verdict

__all__ = ["OpacusEvidence", "OpacusVerdict", "accountant_epsilon", "calibrated_steps_shortfall", "claim_step_mu", "opacus_verdict", "read_run", "refuted_run"]


@dataclasses.dataclass(frozen=True)
class OpacusEvidence(Result):
    """What the audit read from the user's Opacus objects and measured on its canary coordinates; evidence, not the claim.

    ``noise_multipliers``: the distinct σ the optimizer held at the audited
    steps; ``noise_measured``: the standard deviation of the audit
    coordinates' released noise (in units of σ·C, so it estimates the σ that
    was applied); ``sample_rate`` and ``run_steps`` with where each was read
    (``"accountant history"``, ``"data loader"``, ``"audited steps"``);
    ``accountant_noise_multipliers`` and ``accountant_epsilon`` (at the
    claim's δ) from Opacus' accountant, where given.
    """

    noise_multipliers: tuple[float, ...]
    noise_measured: float | None
    sample_rate: float | None
    sample_rate_source: str | None
    run_steps: int
    run_steps_source: str
    audited_steps: int
    accountant_noise_multipliers: tuple[float, ...] = ()
    accountant_epsilon: float | None = None


@dataclasses.dataclass(frozen=True)
class OpacusVerdict(Result):
    """The user's claim against the audit, both ways, and the findings of the evidence.

    ``flagged`` is true when either bound exceeds its claim or a finding
    contradicts the claim; ``implied_noise`` is σ_min, the least noise the
    claim allows at the run's q and T.
    """

    claim: Claim
    per_step: Verdict
    end_to_end: Verdict
    implied_noise: float
    findings: tuple[str, ...]
    flagged: bool


def read_run(*, accountant=None, data_loader=None, audited_steps: int, strict: bool = True) -> dict:
    """q and the run's step count, with where each was read, and the accountant's σs: from the history, else the loader and the audited steps.

    A data loader whose rate differs from the accountant's is refused, or with
    ``strict=False`` returned as ``loader_sample_rate`` (a finding of the loop checks).
    """
    history = list(getattr(accountant, "history", [])) if accountant is not None else []
    rates = sorted({float(rate) for _, rate, _ in history})
    out: dict[str, Any] = {"accountant_noise_multipliers": tuple(sorted({float(noise) for noise, _, _ in history}))}
    if history:
        if len(rates) > 1:
            raise ValueError(f"`accountant` history holds several sampling rates {rates}: a run at one rate q is needed to convert the claim")
        out.update(sample_rate=rates[0], sample_rate_source="accountant history", run_steps=sum(int(count) for *_, count in history))
        out["run_steps_source"] = "accountant history"
    else:
        out.update(run_steps=int(audited_steps), run_steps_source="audited steps", sample_rate=None, sample_rate_source=None)
    loader_rate = getattr(data_loader, "sample_rate", None) if data_loader is not None else None
    if loader_rate is None and data_loader is not None and len(data_loader):
        loader_rate = 1.0 / len(data_loader)  # as Opacus computes it for a plain DataLoader
    if loader_rate is not None:
        if out["sample_rate"] is not None and not np.isclose(float(loader_rate), out["sample_rate"], rtol=1e-9):
            if not strict:
                out["loader_sample_rate"] = float(loader_rate)
                return out
            raise ValueError(f"`data_loader`'s sampling rate {float(loader_rate):g} differs from the `accountant` history's {out['sample_rate']:g}")
        if out["sample_rate"] is None:
            out.update(sample_rate=float(loader_rate), sample_rate_source="data loader")
    return out


PRV_LEAST_NOISE = 0.3  # below it Opacus' PRV accountant takes minutes (over 10 at σ = 0.098); RDP takes under a second at any σ


def accountant_epsilon(accountant, delta: float) -> float | None:
    """The ε the user's accountant reports at ``delta``, computed in bounded time; None without history.

    Opacus' RDP and GDP accountants are asked (on a copy: some cache). Any
    other (PRV) is asked only where every σ in its history is at least
    ``PRV_LEAST_NOISE``; below, its history is accounted with dp_accounting's
    RDP accountant instead, an upper bound on the ε of the steps it recorded
    (what any correct accountant reports is at most that), in under a second.
    """
    history = list(getattr(accountant, "history", [])) if accountant is not None else []
    if not history:
        return None
    from opacus.accountants import GaussianAccountant, RDPAccountant

    if isinstance(accountant, (RDPAccountant, GaussianAccountant)) or min(float(s) for s, _, _ in history) >= PRV_LEAST_NOISE:
        return float(copy.deepcopy(accountant).get_epsilon(delta))
    import dp_accounting

    rdp = dp_accounting.rdp.RdpAccountant()
    for sigma, rate, count in history:
        rdp.compose(dp_accounting.PoissonSampledDpEvent(float(rate), dp_accounting.GaussianDpEvent(float(sigma))), int(count))
    return float(rdp.get_epsilon(delta))


def calibrated_steps_shortfall(sample_rate: float, run_steps: int) -> int | None:
    """The steps Opacus' ``get_noise_multiplier`` calibrated σ for, where that is fewer than a run of whole epochs took; else None.

    It takes ``int(epochs / sample_rate)``; in floating point 3 / (1 / 77) is
    230.99999999999997, so a loop of 3 epochs of 77 batches (231 steps) gets
    the σ of 230 and can end a little above its target ε.

    >>> calibrated_steps_shortfall(1 / 77, 231)
    230
    >>> calibrated_steps_shortfall(1 / 64, 192) is None
    True
    """
    epochs = round(run_steps * sample_rate)
    if epochs < 1 or abs(run_steps * sample_rate - epochs) > 1e-9 * epochs:  # not a whole number of epochs
        return None
    calibrated = int(epochs / sample_rate)
    return calibrated if calibrated < run_steps else None


def refuted_run(step_bound, *, sample_rate: float | None, num_steps: int) -> tuple[str, float | None]:
    """(the null the per-step bound refutes, named for the run, and the ε(δ) it implies end to end; None without q).

    The bound refutes one Gaussian step with σ >= σ_r; DP-SGD at any σ >= σ_r
    noises each step so, hence it refutes DP-SGD (q, σ >= σ_r, T), whose ε(δ)
    at σ_r (optimistic PLD, rounded low) is the end-to-end lower bound: the
    composition of :func:`~privaudit.stats.dpsgd_claims.end_to_end_from_step`,
    the one the verdict uses.

    >>> from types import SimpleNamespace
    >>> refuted_run(SimpleNamespace(parameter=0.5, delta=1e-5, null="not a Gaussian step with sigma >= 2"), sample_rate=1.0, num_steps=4)[0]
    'not DP-SGD with sigma >= 2, q = 1, T = 4'
    """
    mu = float(step_bound.parameter)
    if mu <= 0.0:
        return "nothing refuted", None if sample_rate is None else 0.0
    if sample_rate is None:
        return str(step_bound.null), None
    named = f"not {DPSGD(sample_rate, num_steps, step_bound.delta).describe(mu)}"
    return named, end_to_end_from_step(mu, step_bound.delta, sampling_prob=sample_rate, num_steps=num_steps)


def claim_step_mu(claimed_epsilon: float | None, claimed_delta: float, *, sigma_read: float, sample_rate: float | None, num_steps: int) -> float:
    """The per-step μ = 1/σ of the claim being tested: 1/σ_min of the user's claim at the run's q and T, else 1/σ read from the optimizer.

    >>> round(claim_step_mu(4.0, 1e-5, sigma_read=2.0, sample_rate=1.0, num_steps=1), 3), claim_step_mu(None, 1e-5, sigma_read=2.0, sample_rate=None, num_steps=1)
    (0.925, 0.5)
    """
    if not sigma_read > 0.0 and (claimed_epsilon is None or sample_rate is None):
        raise ValueError(f"the order-statistics test needs a claim: pass `claimed_epsilon`, or train with noise (σ read {sigma_read:g})")
    if claimed_epsilon is None or sample_rate is None:
        return 1.0 / sigma_read
    sigma = least_noise_for_claim(claimed_epsilon, claimed_delta, sampling_prob=sample_rate, num_steps=num_steps)
    if sigma > 0.0:
        return 1.0 / sigma
    if sigma_read > 0.0:
        return 1.0 / sigma_read
    raise ValueError(
        f"`claimed_epsilon` {claimed_epsilon:g} implies no noise at q = {sample_rate:g}, T = {num_steps}, and none ran: nothing to design the order-statistics test for"
    )


def opacus_verdict(
    step_bound,
    *,
    claimed_epsilon,
    claimed_delta,
    evidence: OpacusEvidence,
    accountant=None,
    compose_over: int | None = None,
    loop_findings: tuple[str, ...] = (),
) -> tuple[OpacusVerdict | None, OpacusEvidence]:
    """The verdict (None without a claim) and the evidence, with Opacus' accountant's ε at the claim's δ added.

    The end-to-end bound composes the per-step bound over ``compose_over``
    steps (default: the audited steps). ``loop_findings`` (the loop checks'
    mismatches) join the findings and flag the run.
    """
    if claimed_epsilon is None:
        if claimed_delta is not None:
            raise ValueError("`claimed_delta` needs `claimed_epsilon`")
        return None, evidence
    claim = Claim(epsilon=claimed_epsilon, delta=step_bound.delta if claimed_delta is None else claimed_delta, quantity="end-to-end")
    if evidence.sample_rate is None:
        raise ValueError(
            "`claimed_epsilon` is end to end: converting it needs the sampling rate q that ran; pass `accountant=` (privacy_engine.accountant) or `data_loader=`"
        )
    where = f"q from the {evidence.sample_rate_source}, T from the {evidence.run_steps_source}"
    per_step, end_to_end, sigma_min = step_and_end_verdicts(
        step_bound, claim, sampling_prob=evidence.sample_rate, run_steps=evidence.run_steps, observed_steps=compose_over or evidence.audited_steps, where=where
    )
    low = min(evidence.noise_multipliers + evidence.accountant_noise_multipliers)
    if low >= sigma_min:  # below it the finding says it all, and some accountants (PRV) take minutes on so little noise
        evidence = dataclasses.replace(evidence, accountant_epsilon=accountant_epsilon(accountant, claim.delta))
    findings = list(loop_findings)
    rate_read = float(evidence.sample_rate or 0.0)  # checked above: a claim needs q
    shortfall = noise_shortfall(low, claim, sampling_prob=rate_read, num_steps=evidence.run_steps)[1]
    if shortfall is not None:
        findings.append(shortfall)
    if len(set(evidence.noise_multipliers + evidence.accountant_noise_multipliers)) > 1:
        seen = sorted(set(evidence.noise_multipliers + evidence.accountant_noise_multipliers))
        findings.append(f"σ changed during the run: the optimizer and accountant held {', '.join(f'{value:.4g}' for value in seen)}")
    if evidence.accountant_epsilon is not None and evidence.accountant_epsilon > claim.epsilon * (1.0 + 1e-6):
        rate = evidence.sample_rate
        calibrated = None if rate is None else calibrated_steps_shortfall(rate, evidence.run_steps)
        cause = (
            ""
            if calibrated is None or rate is None
            else f" (a likely cause: make_private_with_epsilon calibrates σ for int(epochs / sample_rate) = {calibrated} steps, "
            f"and the division fell short of the {evidence.run_steps} that {round(evidence.run_steps * rate)} epochs take)"
        )
        findings.append(
            f"Opacus' accountant reports ε = {evidence.accountant_epsilon:.4g} at δ = {claim.delta:g} for the run, above the claimed {claim.epsilon:g}{cause}"
        )
    verdict = OpacusVerdict(
        claim=claim,
        per_step=per_step,
        end_to_end=end_to_end,
        implied_noise=sigma_min,
        findings=tuple(findings),
        flagged=bool(per_step.flagged or end_to_end.flagged or findings),
    )
    return verdict, evidence


def describe(verdict: OpacusVerdict | None) -> list[str]:
    """The verdict's lines for a console or a report: the two comparisons, then each finding."""
    from ..stats.verdict import describe_verdict

    if verdict is None:
        return [describe_verdict(None).replace("--claimed-epsilon and --claimed-delta", "claimed_epsilon= and claimed_delta=")]
    return [describe_verdict(verdict.end_to_end), describe_verdict(verdict.per_step), *(f"finding: {line}" for line in verdict.findings)]
