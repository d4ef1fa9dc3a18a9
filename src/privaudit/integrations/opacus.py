"""Audit Opacus' DPOptimizer as shipped, with gradient canaries on audit coordinates.

No Opacus code is patched. After ``PrivacyEngine.make_private`` the auditor
adds one parameter of audit coordinates to the optimizer as a parameter group
of its own (learning rate 0), and before each step it appends the canaries'
per-example gradients to the per-sample gradients Opacus computed: zero rows
on the model's parameters, canary rows on the audit coordinates. Opacus then
clips, sums, noises and averages them with the batch, as in any step, and the
auditor reads the audit coordinates of the privatized gradient.

Because the audit parameter never enters the forward pass, the model and its
training are unchanged, and the cost is one vector of ``audit_size`` floats.

Appending rows to every per-sample gradient copies all of them, which costs
more than the rest of the audit on large models. :meth:`OpacusCanaryAuditor.reserve`,
called before ``backward()``, avoids the copy: it gives each parameter a
zeroed buffer of ``batch + canaries`` rows that Opacus' backward hook then adds the
batch's per-sample gradients into (Opacus accumulates into an existing
``_current_grad_sample``) in place of the buffer it would allocate. This reads an
internal of Opacus, so :meth:`step` checks that each parameter's per-sample
gradient is the buffer it was given and falls back to the copy otherwise.

The buffers, and the audit parameter's per-sample gradient (zero rows for the
batch, then the canary rows), persist from step to step: each step hands Opacus
zeroed views of their first rows, so the audit allocates nothing per step (in
place of Opacus' own allocation, whose fresh pages can cost more than zeroing).
A per-sample gradient therefore holds its values until the next :meth:`reserve`
only (Opacus' ``zero_grad()`` drops it anyway).
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .._core.extras import require
from .._core.results import Result
from .._core.validation import check_count, check_probability
from ..models.device import require_torch
from ..stats.bounds import EpsilonLowerBound
from ..stats.ceiling import Ceiling, make_ceiling
from ..stats.gaussian_steps import GaussianStepBound, gaussian_step_bound
from .opacus_verdict import OpacusEvidence, OpacusVerdict, accountant_epsilon, claim_step_mu, opacus_verdict, read_run, refuted_run

__all__ = [
    "OpacusAuditResult",
    "OpacusCanaryAuditor",
    "OpacusClaims",
    "OpacusSettings",
    "audit_opacus",
    "check_audit_size",
    "opacus_claims",
    "opacus_release",
    "private_copy",
    "read_opacus_settings",
    "step_ceiling",
    "threshold_bound",
]


class OpacusCanaryAuditor:
    """Wraps a DPOptimizer's step so that each step carries canary gradients.

    Call :meth:`step` with the canary rows after ``loss.backward()``, in place
    of ``optimizer.step()``; it returns the released audit coordinates.
    ``denominator`` is what Opacus divides the noisy sum by.
    """

    def __init__(self, optimizer, audit_size: int):
        torch = require_torch()
        if not (hasattr(optimizer, "expected_batch_size") and hasattr(optimizer, "original_optimizer")):
            raise ValueError(f"`optimizer` must be an Opacus DPOptimizer (from PrivacyEngine.make_private), got {type(optimizer).__name__}")
        self.torch, self.optimizer = torch, optimizer
        self.audit_size = check_count(audit_size, "audit_size", minimum=1)
        self.audit = torch.nn.Parameter(torch.zeros(self.audit_size))
        optimizer.add_param_group({"params": [self.audit], "lr": 0.0})
        self.audit.summed_grad = None  # the attribute DPOptimizer gives each parameter it manages
        self._buffers: list = []
        self._buffer_params: list = []
        self._capacity = 0  # reserve()'s per-sample gradient buffers, one per model parameter
        self._reserved: tuple | None = None  # (batch size, canaries, parameters, the views handed to Opacus) between reserve() and step()
        self._audit_rows = torch.zeros((0, self.audit_size), dtype=self.audit.dtype)  # zero but for its last _canary_rows rows
        self._canary_rows = 0

    @property
    def denominator(self) -> float:
        if self.optimizer.loss_reduction == "mean":
            return float(self.optimizer.expected_batch_size)  # one backward pass per step
        return 1.0

    def _model_params(self):
        return [p for p in self.optimizer.params if p is not self.audit and p.requires_grad]

    def reserve(self, batch_size: int, num_canaries: int) -> None:
        """Optional, before ``backward()``: size the per-sample gradient buffers for the canaries."""
        rows = batch_size + num_canaries
        params = self._model_params()
        fresh = rows > self._capacity or len(params) != len(self._buffer_params) or any(p is not q for p, q in zip(params, self._buffer_params))
        if fresh:  # first call, a larger batch or other parameters
            self._capacity = rows + rows // 4 + 8  # room for the batch sizes of Poisson sampling to vary
            self._buffers, self._buffer_params = [p.new_zeros((self._capacity, *p.shape)) for p in params], params
        views = [buffer[:rows] for buffer in self._buffers]
        if not fresh:
            self.torch._foreach_zero_(views)  # one call for all parameters
        for p, view in zip(params, views, strict=True):
            p._current_grad_sample = view
        self._reserved = (batch_size, num_canaries, params, views)

    def _audit_grad_sample(self, batch: int, canaries):
        """The audit parameter's per-sample gradient: ``batch`` zero rows, then the canary rows.

        The canary rows sit at the end of a persistent zero buffer and the
        per-sample gradient is its last ``batch + canaries`` rows, so only the
        canary rows are ever written: each step zeroes the ones the last step
        wrote and this step does not overwrite.
        """
        rows, count, written = batch + len(canaries), len(canaries), self._canary_rows
        if rows > len(self._audit_rows):
            self._audit_rows, written = self.torch.zeros((rows + rows // 4 + 8, self.audit_size), dtype=self.audit.dtype), 0
        end = len(self._audit_rows)
        if written > count:
            self._audit_rows[end - written : end - count].zero_()
        self._audit_rows[end - count :].copy_(canaries)
        self._canary_rows = count
        return self._audit_rows[end - rows :]

    def _check_grad_samples(self, params) -> None:
        if not params or any(getattr(p, "grad_sample", None) is None for p in params):
            raise ValueError(
                "per-sample gradients are missing: call backward() on a loss of the model that PrivacyEngine.make_private returned "
                "(a GradSampleModule) before step()"
            )

    def step(self, canary_rows) -> np.ndarray:
        """Put ``canary_rows`` in the batch, take the optimizer's step, return the released audit coordinates."""
        self.inject(canary_rows)
        self.optimizer.step()
        return self.audit.grad.detach().numpy().astype(np.float64)

    def inject(self, canary_rows) -> None:
        """Put ``canary_rows`` in the batch's per-sample gradients, for the next step of the optimizer."""
        torch = self.torch
        canaries = torch.from_numpy(np.ascontiguousarray(canary_rows, dtype=np.float64).reshape(-1, self.audit_size))  # cast as it is copied in
        reserved, self._reserved = self._reserved, None
        if reserved is not None and reserved[1] != len(canaries):
            raise ValueError(f"`canary_rows` must hold the {reserved[1]} rows given to reserve(), got {len(canaries)}")
        if reserved is not None and all(getattr(p, "grad_sample", None) is view for p, view in zip(reserved[2], reserved[3], strict=True)):
            batch = reserved[0]
        else:  # no reserve(), or Opacus did not use the buffers: append zero rows
            model_params = self._model_params()
            self._check_grad_samples(model_params)
            batch = model_params[0].grad_sample.shape[0]
            for p in model_params:
                if hasattr(p, "_current_grad_sample"):
                    del p._current_grad_sample
                p.grad_sample = torch.cat([p.grad_sample, p.grad_sample.new_zeros((len(canaries), *p.grad_sample.shape[1:]))])
        self.audit.grad_sample = self._audit_grad_sample(batch, canaries)


@dataclasses.dataclass(frozen=True)
class OpacusSettings(Result):
    """The mechanism an Opacus setup runs, read from its own objects."""

    noise_multiplier: float
    max_grad_norm: float
    sample_rate: float
    steps: int  # steps the accountant has recorded so far (0 before training)
    expected_batch_size: int
    loss_reduction: str
    sample_rate_source: str


def _check_dp_optimizer(optimizer) -> None:
    opacus = require("opacus", purpose="auditing Opacus")
    if not isinstance(optimizer, opacus.optimizers.DPOptimizer):
        raise ValueError(f"`optimizer` must be an Opacus DPOptimizer (from PrivacyEngine.make_private), got {type(optimizer).__name__}")
    per_layer = getattr(optimizer, "max_grad_norms", None)  # a per-layer optimizer's max_grad_norm is the norms' norm, a number
    if per_layer is not None or not isinstance(optimizer.max_grad_norm, (int, float)):
        norms = optimizer.max_grad_norm if per_layer is None else per_layer
        raise ValueError(f"`optimizer` must clip all parameters together (flat clipping), got per-layer clip norms {norms!r}")


def read_opacus_settings(optimizer, *, data_loader=None, accountant=None) -> OpacusSettings:
    """σ, C, the sampling rate and the step count of an Opacus setup, read without changing it.

    σ and C come from the DPOptimizer; the sampling rate from the data loader
    (a DPDataLoader's ``sample_rate``, else 1 / number of batches, as Opacus
    computes it) or from the accountant's history; the steps from that
    history. Sources that disagree are refused.
    """
    _check_dp_optimizer(optimizer)
    sigma = float(optimizer.noise_multiplier)
    rates, source = [], None
    if data_loader is not None:
        rate = getattr(data_loader, "sample_rate", None)
        if rate is None:
            if len(data_loader) < 1:
                raise ValueError("`data_loader` must yield at least one batch")
            rate = 1.0 / len(data_loader)
        rates.append(float(rate))
        source = "data_loader"
    history = list(getattr(accountant, "history", [])) if accountant is not None else []
    steps = 0
    for noise, rate, count in history:
        if not np.isclose(noise, sigma, rtol=1e-9) or (rates and not np.isclose(rate, rates[0], rtol=1e-9)):
            raise ValueError(
                f"`accountant` history holds steps with σ = {noise:g}, q = {rate:g}, which differ from the optimizer's σ = {sigma:g}"
                + (f" and the data loader's q = {rates[0]:g}" if rates else "")
            )
        rates.append(float(rate))
        steps += int(count)
        source = source or "accountant"
    if not rates:
        raise ValueError("`data_loader` or an `accountant` with history must be given to read the sampling rate")
    return OpacusSettings(
        noise_multiplier=sigma,
        max_grad_norm=float(optimizer.max_grad_norm),
        sample_rate=rates[0],
        steps=steps,
        expected_batch_size=int(optimizer.expected_batch_size),
        loss_reduction=str(optimizer.loss_reduction),
        sample_rate_source=str(source),
    )


@dataclasses.dataclass(frozen=True)
class OpacusClaims(Result):
    """The ε(δ) the settings read from the user's objects give (PLD, pessimistic), beside Opacus' own accountant's: evidence, not the user's claim."""

    delta: float
    step_epsilon: float  # one step with the canaries in every step: the Gaussian mechanism, μ = 1/σ
    end_to_end_epsilon: float | None  # all ``steps`` with Poisson rate q; None before training
    steps: int
    opacus_epsilon: float | None  # what the user's accountant reports for the same δ (an RDP upper bound where PRV would take minutes)


def opacus_claims(settings: OpacusSettings, *, delta: float, steps: int | None = None, accountant=None) -> OpacusClaims:
    """Per-step and end-to-end ε at ``delta`` from σ, q and the step count (``steps`` overrides the accountant's)."""
    from ..stats.conversions import gaussian_epsilon, gdp_epsilon

    delta = check_probability(delta, "delta")
    steps = settings.steps if steps is None else check_count(steps, "steps", minimum=1)
    if settings.noise_multiplier <= 0:
        raise ValueError(f"`noise_multiplier` must be > 0 for a finite claim, got {settings.noise_multiplier:g}")
    step = float(gdp_epsilon(1.0 / settings.noise_multiplier, delta))
    end = gaussian_epsilon(settings.noise_multiplier, delta, sampling_prob=settings.sample_rate, num_steps=steps) if steps else None
    own = accountant_epsilon(accountant, delta)  # bounded in time: PRV at tiny σ is replaced by an RDP upper bound
    return OpacusClaims(delta=delta, step_epsilon=step, end_to_end_epsilon=end, steps=steps, opacus_epsilon=own)


def private_copy(model, optimizer, settings: OpacusSettings, *, seed: int = 0):
    """A deep copy of a made-private model and optimizer, with noise from a seeded generator of its own.

    The user's model, optimizer (param groups and state) and accountant are
    not touched: the copy has its own parameters, optimizer state and no
    accountant, and is in training mode (a model left in eval mode after an
    accuracy check records no per-sample gradients). Returns (model copy, DPOptimizer copy).
    """
    torch = require_torch()
    opacus = require("opacus", purpose="auditing Opacus")
    _check_dp_optimizer(optimizer)
    if not isinstance(model, opacus.GradSampleModule):
        raise ValueError(f"`model` must be the GradSampleModule that PrivacyEngine.make_private returned, got {type(model).__name__}")
    model_copy = copy.deepcopy(model)  # its hooks are bound to the copy, not to the user's module
    model_copy.train()  # the copy trains, as the user's run did, even if the user's model was left in eval mode (which stays as it is)
    memo = {id(p): q for p, q in zip(model.parameters(), model_copy.parameters(), strict=True)}
    for q in model_copy.parameters():  # a Parameter's deep copy drops the attributes GradSampleModule gives it
        if q.requires_grad:
            q.grad_sample, q._forward_counter = None, 0
    inner = copy.deepcopy(optimizer.original_optimizer, memo)  # state and groups keyed to the copy's parameters
    private = type(optimizer)(
        inner,
        noise_multiplier=settings.noise_multiplier,
        max_grad_norm=settings.max_grad_norm,
        expected_batch_size=settings.expected_batch_size,
        loss_reduction=settings.loss_reduction,
        generator=torch.Generator(device=next(model_copy.parameters()).device).manual_seed(seed),
    )
    return model_copy, private


def _forever(data_loader):
    while True:  # a fresh pass each time: Poisson batches are re-drawn, not replayed
        yield from data_loader


def opacus_release(model, optimizer, data_loader, loss_fn, audit_size: int, *, accountant=None, seed: int = 0):
    """A ``release(rows)`` callable for :func:`~privaudit.observation.gradient.collect_gradient_observations`.

    Each call trains one Opacus step of a private copy of ``model`` and
    ``optimizer`` (:func:`private_copy`) on a Poisson batch of
    ``data_loader``'s dataset at the setup's own sampling rate, drawn with a
    seeded generator, with the canary rows in the batch. The user's objects
    never change. Returns (release, auditor).
    """
    torch = require_torch()
    opacus = require("opacus", purpose="auditing Opacus")
    settings = read_opacus_settings(optimizer, data_loader=data_loader, accountant=accountant)
    model_copy, private = private_copy(model, optimizer, settings, seed=seed)
    auditor = OpacusCanaryAuditor(private, audit_size)
    loader = opacus.data_loader.DPDataLoader(
        data_loader.dataset, sample_rate=settings.sample_rate, collate_fn=data_loader.collate_fn, generator=torch.Generator().manual_seed(seed + 1)
    )
    batches = _forever(loader)

    def release(rows):
        x, y = next(batches)
        private.zero_grad()
        auditor.reserve(len(x), len(rows))
        loss_fn(model_copy(x), y).backward()
        return auditor.step(rows)

    release.model, release.settings = model_copy, settings  # type: ignore[attr-defined]
    return release, auditor


def check_audit_size(audit_size, canaries_per_step: int) -> int:
    """``audit_size`` must be 10 × ``canaries_per_step``: one slot per coordinate, 9 empty slots per canary.

    >>> check_audit_size(None, 20)
    200
    >>> check_audit_size(150, 20)
    Traceback (most recent call last):
    ...
    ValueError: `audit_size` must be 10 × `canaries_per_step` = 10 × 20 = 200, got 150
    """
    canaries_per_step = check_count(canaries_per_step, "canaries_per_step", minimum=1)
    wanted = 10 * canaries_per_step
    if audit_size is None:
        return wanted
    if isinstance(audit_size, bool) or not isinstance(audit_size, (int, np.integer)) or int(audit_size) != wanted:
        raise ValueError(f"`audit_size` must be 10 × `canaries_per_step` = 10 × {canaries_per_step} = {wanted}, got {audit_size}")
    return wanted


def threshold_bound(in_scores, out_scores, *, delta: float, confidence: float) -> EpsilonLowerBound:
    """The former per-step bound of both Opacus audits: GDP, Clopper–Pearson at threshold 0.5 (kept beside the family's test, for comparison)."""
    from ..stats.bounds import epsilon_lower_bound

    return epsilon_lower_bound(in_scores, out_scores, delta=delta, method="gdp", confidence=confidence, threshold=0.5)


def step_ceiling(bound: GaussianStepBound, *, raise_with: str) -> Ceiling | None:
    """The per-step bound's ceiling (inf for the t test: no design caps it)."""
    design = f"{bound.num_in} canary and {bound.num_out} other observations, {bound.confidence:.0%}, {bound.method} test"
    if bound.method.startswith("gaussian"):  # the in-loop t test, or the hidden state's on the final sums
        design += " (its t statistic grows without bound with the separation: no ceiling)"
    return make_ceiling(bound.epsilon, bound.ceiling, raise_with=raise_with, design=design)


@dataclasses.dataclass(frozen=True)
class OpacusAuditResult(Result):
    """A per-step ε lower bound for the user's Opacus setup, its end-to-end conversion and the verdict on the user's claim.

    ``claims`` is what the settings read from the user's objects give (σ, q,
    T through a PLD accountant, and Opacus' own accountant): evidence, not the
    claim. ``verdict`` (None without ``claimed_epsilon``) holds the user's claim
    against the bound, per step and end to end; ``flagged`` is the verdict's
    (None without a claim). ``ceiling`` is the largest per-step bound this
    design could show. ``bound`` tests the claim's own family, one Gaussian
    step (:func:`~privaudit.stats.gaussian_steps.gaussian_step_bound`, the t
    test by default); ``refuted`` names the DP-SGD it refutes over the run's
    steps at its q, ``end_to_end_epsilon`` that DP-SGD's ε(δ); ``threshold_bound``
    is the former per-step bound (GDP, Clopper–Pearson at threshold 0.5), for
    comparison only.
    """

    settings: OpacusSettings
    claims: OpacusClaims
    bound: GaussianStepBound  # the claim's family: one Gaussian step, tested per observation
    flagged: bool | None
    num_steps: int
    canaries_per_step: int
    audit_size: int
    evidence: OpacusEvidence | None = None
    verdict: OpacusVerdict | None = None
    ceiling: Ceiling | None = None
    refuted: str = ""
    end_to_end_epsilon: float | None = None
    threshold_bound: EpsilonLowerBound | None = None
    threat_model: str = "white-box, gradient canaries, every step observed"


def audit_opacus(
    model,
    optimizer,
    data_loader,
    loss_fn,
    *,
    accountant=None,
    num_steps: int = 100,
    canaries_per_step: int = 100,
    audit_size: int | None = None,
    delta: float = 1e-5,
    confidence: float = 0.95,
    claimed_epsilon: float | None = None,
    claimed_delta: float | None = None,
    seed: int = 0,
    test: str = "gaussian",
) -> OpacusAuditResult:
    """Audit a user's Opacus setup on a private copy; the user's objects stay bit-for-bit unchanged.

    ``model``, ``optimizer`` and ``data_loader`` are what ``PrivacyEngine.make_private``
    returned; ``accountant`` (``privacy_engine.accountant``) supplies the
    run's step count and Opacus' own ε, recorded as evidence. The
    copy trains ``num_steps`` steps with ``canaries_per_step`` Dirac
    canaries of norm 100·C (a missing clip shows) on ``audit_size`` = 10 ×
    ``canaries_per_step`` audit coordinates; torch's global RNG (CPU, and the model's CUDA
    devices) is restored afterwards, so the copy's dropout draws do not reach the user's loop.
    ``claimed_epsilon`` and ``claimed_delta`` (default ``delta``) are the
    user's end-to-end claim for the run the accountant recorded; the verdict
    composes the per-step bound over that run's steps, each at the σ and q the
    accountant recorded (which must be the optimizer's, or the settings are refused).
    ``test`` picks the per-step test (:func:`~privaudit.stats.gaussian_steps.gaussian_step_bound`):
    the t test, or the order-statistics test designed for the claim's σ_min (σ read without a claim).
    """
    torch = require_torch()
    from ..canaries.gradient import GradientCanary
    from ..observation.gradient import (
        collect_gradient_observations,  # the shared collector of gradient-canary observations
    )
    from ..stats.gaussian_steps import STEP_TESTS

    num_steps = check_count(num_steps, "num_steps", minimum=1)
    audit_size = check_audit_size(audit_size, canaries_per_step)
    delta = check_probability(delta, "delta")
    confidence = check_probability(confidence, "confidence")
    if test not in STEP_TESTS:
        raise ValueError(f"`test` must be one of {', '.join(STEP_TESTS)}, got {test!r}")
    settings = read_opacus_settings(optimizer, data_loader=data_loader, accountant=accountant)
    if claimed_epsilon is not None and not settings.steps:
        raise ValueError("`claimed_epsilon` is for the run: pass the `accountant` (privacy_engine.accountant) after training, whose history holds its steps")
    claims = opacus_claims(settings, delta=delta, accountant=accountant)
    cuda_devices = sorted({p.device.index or 0 for p in model.parameters() if p.device.type == "cuda"})
    with torch.random.fork_rng(devices=cuda_devices):
        release, auditor = opacus_release(model, optimizer, data_loader, loss_fn, audit_size, accountant=accountant, seed=seed)
        observations = collect_gradient_observations(
            release,
            num_steps=num_steps,
            canaries_per_step=canaries_per_step,
            num_slots=audit_size,
            clip_norm=settings.max_grad_norm,
            denominator=auditor.denominator,
            canary=GradientCanary(kind="dirac", slot_size=1, norm=100.0),
            seed=seed,
        )
    run_steps = settings.steps or num_steps  # the run the accountant recorded; the audited steps before training
    claim = None
    if test != "gaussian":  # designed for the claim's own step: 1/σ_min of the user's claim, else 1/σ read
        at = delta if claimed_delta is None else claimed_delta
        claim = claim_step_mu(claimed_epsilon, at, sigma_read=settings.noise_multiplier, sample_rate=settings.sample_rate, num_steps=run_steps)
    bound = gaussian_step_bound(observations.in_scores, observations.out_scores, delta=delta, confidence=confidence, test=test, claim=claim, seed=seed)
    refuted, end_to_end = refuted_run(bound, sample_rate=settings.sample_rate, num_steps=run_steps)
    evidence = OpacusEvidence(
        noise_multipliers=(settings.noise_multiplier,),
        noise_measured=float(np.std(observations.out_scores, ddof=1)),
        audited_steps=num_steps,
        **read_run(accountant=accountant, data_loader=data_loader, audited_steps=num_steps),
    )
    verdict, evidence = opacus_verdict(
        bound, claimed_epsilon=claimed_epsilon, claimed_delta=claimed_delta, evidence=evidence, accountant=accountant, compose_over=settings.steps or None
    )
    return OpacusAuditResult(
        settings=settings,
        claims=claims,
        bound=bound,
        flagged=None if verdict is None else verdict.flagged,
        num_steps=num_steps,
        canaries_per_step=int(canaries_per_step),
        audit_size=audit_size,
        evidence=evidence,
        verdict=verdict,
        ceiling=step_ceiling(bound, raise_with="more canary trials"),
        refuted=refuted,
        end_to_end_epsilon=end_to_end,
        threshold_bound=threshold_bound(observations.in_scores, observations.out_scores, delta=delta, confidence=confidence),
    )
