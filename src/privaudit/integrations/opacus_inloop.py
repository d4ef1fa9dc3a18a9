"""Auditing Opacus inside the user's own training loop: the user keeps calling ``optimizer.step()``.

Inside ``with OpacusInLoopAuditor(model, optimizer, canaries_per_step=k):``
each step of the user's DPOptimizer carries ``k`` Dirac canaries of norm
``canary_norm`` · C on ``audit_size`` = 10·k audit coordinates (the
:class:`~privaudit.integrations.opacus.OpacusCanaryAuditor`'s parameter group
of learning rate 0). The optimizer's ``pre_step``, ``clip_and_accumulate``
and ``add_noise`` are wrapped for the block's duration (instance
attributes): the canary rows become the audit parameter's per-sample
gradient before Opacus clips and noises, and the privatized audit
coordinates are read right after. On exit the parameter group, its optimizer
state and the wrappers are removed.

The user's training is unchanged, bit for bit on any CPU, and so is every
random draw of the user's loop, because the user's parameters go through
exactly the computations they go through without privaudit, on the same
tensors:

* clipping. Opacus computes every row's norm over all parameters at once
  and sums the clipped rows with one ``einsum``; appending canary rows (or a
  zero column for the audit coordinates) changes those tensors' shapes, and
  with them the order in which a vectorised reduction adds, which moved the
  user's weights by 1e-8 per step on some CPUs. The wrapped
  ``clip_and_accumulate`` therefore calls Opacus' own twice: once with the
  user's parameter groups alone (the user's per-sample gradients, untouched),
  then with the audit group alone (the canary rows). A canary row is zero on
  the model's parameters and a record's row zero on the audit coordinates,
  so each row's norm, and its clipping, is the same as in one joint call;
* noise. Opacus draws one Gaussian per parameter, in parameter order, from the
  optimizer's ``generator`` (torch's global RNG when it has none). The
  wrapped ``add_noise`` calls the optimizer's own twice: with the user's
  groups and the user's generator (exactly the draws it makes without
  privaudit), then with the audit group and a private ``torch.Generator``
  seeded from the auditor's seed;
* the canary slots come from a private numpy Generator. Nothing draws from
  torch's global RNG (CPU or CUDA), numpy's legacy global state or ``random``.

Each noised step is also recorded as the accountant would need it to be
(:mod:`privaudit.integrations.opacus_loop`): batch size, passes, which
records (where the loader's dataset is a ``TensorDataset``), BatchNorm layers
in training mode, the accountant's entries; :meth:`OpacusInLoopAuditor.result`
holds each against the accounting and flags any mismatch.

Optimizers whose noise cannot be split this way (Opacus' distributed,
AdaClip and fast-gradient-clipping optimizers, which override ``pre_step``,
``clip_and_accumulate`` or ``add_noise``) are refused, as are per-layer clip
norms. The observations are read as in Tight Auditing §5.2, o = released · B / C:
N(1, σ²) in a slot with a canary, N(0, σ²) in one without. :meth:`OpacusInLoopAuditor.result`
records the seeds, the configuration and the conventions read from the optimizer.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._core.conventions import Convention, checked
from .._core.results import Result
from .._core.seeding import check_seed, child_seeds
from .._core.validation import check_count, check_positive, check_probability
from ..stats.bounds import EpsilonLowerBound
from ..stats.ceiling import Ceiling
from ..stats.gaussian_steps import GaussianStepBound, gaussian_step_bound
from .opacus import OpacusCanaryAuditor, _check_dp_optimizer, check_audit_size, step_ceiling, threshold_bound
from .opacus_loop import LoopCheck, LoopRecord, LoopRecorder, loader_kind, loop_checks, noise_check, noise_reuse_check
from .opacus_verdict import OpacusEvidence, OpacusVerdict, claim_step_mu, opacus_verdict, read_run, refuted_run

__all__ = ["OpacusInLoopAuditor", "OpacusInLoopResult"]

NOISE_COORDINATES = 64  # of the user's noise read per noisy step: its scale and its independence across steps are tested on them
THREAT_MODEL = "white-box, gradient canaries in the user's own Opacus loop, every step observed"


@dataclasses.dataclass(frozen=True)
class OpacusInLoopResult(Result):
    """The per-step ε lower bound of an in-loop audit, its end-to-end conversion and the verdict on the user's claim.

    ``bound`` is the test of the claim's own family, one Gaussian step
    (:func:`~privaudit.stats.gaussian_steps.gaussian_step_bound`, the t test
    by default); ``refuted`` names the DP-SGD it refutes over the audited
    steps at the run's q ("not DP-SGD with sigma >= …, q = …, T = …") and
    ``end_to_end_epsilon`` the ε(δ) of that DP-SGD (None where q is not known).
    ``threshold_bound`` is the former per-step bound (GDP, Clopper–Pearson at
    threshold 0.5), kept for comparison; the verdict does not use it.
    ``seeds`` holds the child seeds of ``seed``: ``"canaries"`` (the slots of
    each step's canaries, a numpy Generator) and ``"noise"`` (the audit
    coordinates' noise, a torch.Generator). ``ceiling`` is the largest
    per-step bound this design could show (no error on either side).
    ``evidence`` is what was read from the user's objects and measured;
    ``verdict`` (None without ``claimed_epsilon``) the claim against the bound,
    per step and end to end; ``flagged`` is the verdict's (None without a claim).
    ``loop`` is what fed each noised step and ``loop_checks`` each assumption
    of the accounting held against it: a check with a finding flags the run,
    claim or not (its findings are also the verdict's).
    """

    bound: GaussianStepBound  # the claim's family: one Gaussian step, tested per observation
    num_steps: int
    canaries_per_step: int
    audit_size: int
    canary_norm: float
    noise_multiplier: float
    max_grad_norm: float
    seed: int
    seeds: dict
    framework_versions: dict  # torch and opacus; to_dict adds privaudit's and numpy's
    evidence: OpacusEvidence
    ceiling: Ceiling | None = None
    verdict: OpacusVerdict | None = None
    flagged: bool | None = None
    loop: LoopRecord | None = None
    loop_checks: tuple[LoopCheck, ...] = ()
    refuted: str = ""
    end_to_end_epsilon: float | None = None
    threshold_bound: EpsilonLowerBound | None = None
    threat_model: str = THREAT_MODEL
    conventions: tuple[Convention, ...] = ()


def _check_noise_split(optimizer) -> None:
    """Refuse optimizers whose noise the auditor cannot keep apart from the user's draws."""
    from opacus.optimizers import DPOptimizer

    kind = type(optimizer)
    wrapped = ("pre_step", "clip_and_accumulate", "add_noise")
    if any(getattr(kind, name) is not getattr(DPOptimizer, name) for name in wrapped):
        raise ValueError(
            f"`optimizer` must noise as DPOptimizer does (one draw per parameter in its add_noise), got {kind.__name__}, "
            "which overrides pre_step, clip_and_accumulate or add_noise: the audit's noise could not be kept out of the user's random draws"
        )
    taken = sorted(set(wrapped) & set(vars(optimizer)))
    if taken:
        raise ValueError(f"`optimizer` must not already have its {', '.join(taken)} wrapped (another auditor attached?)")


class OpacusInLoopAuditor:
    """Observe the canary coordinates of every step of the user's own Opacus loop; a context manager.

    ``model`` is the GradSampleModule from ``make_private`` (its forward pre-hook
    sizes the per-sample gradient buffers); one forward and backward per step.
    The block may be entered again: the canaries' and the noise's private
    generators carry on where they stopped.

    >>> import opacus, torch
    >>> model = opacus.GradSampleModule(torch.nn.Linear(4, 2))
    >>> optimizer = opacus.optimizers.DPOptimizer(
    ...     torch.optim.SGD(model.parameters(), lr=0.1), noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=8
    ... )
    >>> with OpacusInLoopAuditor(model, optimizer, canaries_per_step=2, seed=7) as auditor:
    ...     for _ in range(3):  # the user's own loop
    ...         optimizer.zero_grad()
    ...         model(torch.ones(8, 4)).sum().backward()
    ...         optimizer.step()
    >>> result = auditor.result(delta=1e-5)
    >>> result.num_steps, result.bound.num_in, result.bound.num_out, result.seeds == child_seeds(7, ["canaries", "noise"])
    (3, 6, 54, True)
    """

    def __init__(
        self,
        model,
        optimizer,
        *,
        canaries_per_step: int,
        audit_size: int | None = None,
        canary_norm: float = 100.0,
        seed: int = 0,
        accountant=None,
        data_loader=None,
    ):
        self._setup(model, optimizer, canary_norm=canary_norm, seed=seed, accountant=accountant, data_loader=data_loader)
        self.canaries_per_step = check_count(canaries_per_step, "canaries_per_step", minimum=1)
        self.audit_size = check_audit_size(audit_size, canaries_per_step)

    def _setup(self, model, optimizer, *, canary_norm: float, seed: int, accountant, data_loader) -> None:
        """What every loop auditor holds, checked: the user's objects (read, never changed), the seeds and the private generators."""
        import torch

        _check_dp_optimizer(optimizer)
        _check_noise_split(optimizer)
        self.model, self.optimizer = model, optimizer
        self.accountant, self.data_loader = accountant, data_loader  # read, never changed: where q and the run's steps come from
        self.canary_norm = check_positive(canary_norm, "canary_norm")
        self.seed = check_seed(seed)
        self.seeds = child_seeds(self.seed, ["canaries", "noise"])
        self.rng = np.random.default_rng(self.seeds["canaries"])
        self.noise = torch.Generator(device="cpu").manual_seed(self.seeds["noise"])  # the audit parameter lives on the CPU
        self._in: list = []
        self._out: list = []
        self._sigmas: list = []  # the optimizer's σ at each audited step: evidence
        self._user_noise: list = []  # the first NOISE_COORDINATES of the noise drawn for the user's parameters, per noisy step, in units of σ·C
        self._core = self._hook = self._audit_group = None
        self._recorder: LoopRecorder | None = None  # what fed each noised step, over every entry of the block

    # -- attach and detach ---------------------------------------------------------------
    def __enter__(self):
        if self._core is not None:
            raise ValueError("this auditor is already attached")
        _check_noise_split(self.optimizer)
        optimizer = self.optimizer
        self._core = OpacusCanaryAuditor(optimizer, self.audit_size)
        self._audit_group = next(g for g in optimizer.original_optimizer.param_groups if any(p is self._core.audit for p in g["params"]))
        self._originals = (optimizer.pre_step, optimizer.clip_and_accumulate, optimizer.add_noise)
        optimizer.pre_step, optimizer.clip_and_accumulate, optimizer.add_noise = self._pre_step, self._clip, self._add_noise  # deleted on exit
        if self._recorder is None:
            self._recorder = LoopRecorder(self.model, self.data_loader, self.accountant)
        self._hook = self.model.register_forward_pre_hook(self._forward) if self._recorder.tracks_records else None
        return self

    def __exit__(self, *exc):
        core, self._core = self._core, None
        if self._hook is not None:
            self._hook.remove()
        del self.optimizer.pre_step, self.optimizer.clip_and_accumulate, self.optimizer.add_noise
        groups = self.optimizer.original_optimizer.param_groups
        groups[:] = [group for group in groups if group is not self._audit_group]
        self._audit_group = None
        self.optimizer.original_optimizer.state.pop(core.audit, None)
        return False

    # -- per step --------------------------------------------------------------------
    def _forward(self, module, inputs):
        import torch

        if module.training and torch.is_grad_enabled():
            self._recorder.forward(inputs)

    def _user_groups(self) -> list:
        return [group for group in self.optimizer.original_optimizer.param_groups if group is not self._audit_group]

    def _split(self, original) -> None:
        """``original`` (Opacus' own) once on the user's groups alone, once on the audit group alone; the groups restored."""
        inner = self.optimizer.original_optimizer
        groups = inner.param_groups
        try:
            inner.param_groups = self._user_groups()
            original()  # exactly what runs without the audit, on the user's tensors
            inner.param_groups = [self._audit_group]
            original()
        finally:
            inner.param_groups = groups

    def _clip(self):
        self._split(self._originals[1])

    def _add_noise(self):
        """The optimizer's own add_noise, once on the user's groups with the user's generator, once on the audit group with ours."""
        optimizer = self.optimizer
        generator = optimizer.generator
        inner = optimizer.original_optimizer
        groups = inner.param_groups
        try:
            inner.param_groups = self._user_groups()
            self._originals[2]()  # the user's draws, exactly as without the audit
            self._read_user_noise()
            inner.param_groups, optimizer.generator = [self._audit_group], self.noise
            self._originals[2]()
        finally:
            inner.param_groups, optimizer.generator = groups, generator

    def _read_user_noise(self) -> None:
        """The noise just added to the user's parameters (grad − summed_grad, before Opacus scales it), its first coordinates, copied."""
        scale = float(self.optimizer.noise_multiplier) * float(self.optimizer.max_grad_norm)
        if not scale > 0.0:
            return
        parts, taken = [], 0
        for group in self._user_groups():
            for param in group["params"]:
                summed = getattr(param, "summed_grad", None)
                if summed is None or param.grad is None or taken >= NOISE_COORDINATES:
                    continue
                want = NOISE_COORDINATES - taken  # slice before subtracting: a large layer is not copied at every step
                noise = param.grad.detach().reshape(-1)[:want] - summed.detach().reshape(-1)[:want]
                parts.append(noise.double().cpu().numpy() / scale)
                taken += len(parts[-1])
        if parts:
            self._user_noise.append(np.concatenate(parts))

    def _user_grad_samples(self):
        """(rows, passes) of the user's per-sample gradients for this step; refused when backward() did not produce them."""
        audit = self._core.audit
        params = [p for group in self._user_groups() for p in group["params"] if p.requires_grad and p is not audit]
        sample = getattr(params[0], "grad_sample", None) if params else None
        if sample is None:
            raise ValueError(
                "per-sample gradients are missing: call backward() on a loss of the model that PrivacyEngine.make_private returned "
                "(a GradSampleModule) before step()"
            )
        if isinstance(sample, list):
            return sum(len(part) for part in sample), len(sample)
        return len(sample), 1

    def _canary_rows(self, dtype):
        """This step's canary rows (k, audit_size), and what :meth:`_observe` needs to read them: k slots drawn without replacement."""
        import torch

        k, d = self.canaries_per_step, self.audit_size
        slots = self.rng.choice(d, size=k, replace=False)
        canaries = torch.zeros((k, d), dtype=dtype)
        canaries[np.arange(k), slots] = self.canary_norm * float(self.optimizer.max_grad_norm)
        return canaries, slots

    def _observe(self, observed: np.ndarray, slots) -> None:
        """Keep this step's released audit coordinates, in units of C, split by whether their slot held a canary."""
        chosen = np.zeros(self.audit_size, dtype=bool)
        chosen[slots] = True
        self._in.append(observed[chosen])
        self._out.append(observed[~chosen])

    def _pre_step(self, closure=None):
        import torch

        core, d, optimizer = self._core, self.audit_size, self.optimizer
        rows, passes = self._user_grad_samples()
        skip = bool(optimizer._check_skip_next_step(pop_next=False))  # a BatchMemoryManager micro-batch: canaries go in the noised one only
        canaries, design = (torch.zeros((0, d), dtype=core.audit.dtype), None) if skip else self._canary_rows(core.audit.dtype)
        empty = canaries.new_zeros((0, d))
        core.audit.grad_sample = canaries if passes == 1 else [canaries] + [empty] * (passes - 1)  # as many passes as the user's
        proceed = self._originals[0](closure)
        self._recorder.step(rows, passes, bool(proceed), divisor=core.denominator * passes)
        if proceed and design is not None:  # a noised step: the audit coordinates were privatized
            denominator = core.denominator * passes  # Opacus divides by expected_batch_size × accumulated passes
            observed = core.audit.grad.detach().cpu().numpy().astype(np.float64) * denominator / float(optimizer.max_grad_norm)
            self._observe(observed, design)
            self._sigmas.append(float(optimizer.noise_multiplier))
        return proceed

    # -- results -------------------------------------------------------------------------
    @property
    def num_steps(self) -> int:
        return len(self._in)

    def observations(self) -> tuple[np.ndarray, np.ndarray]:
        """(in, out) observations of all steps so far, normalised to N(1, σ²) and N(0, σ²)."""
        if not self._in:
            raise ValueError("no audited step yet: call optimizer.step() inside the `with` block")
        return np.concatenate(self._in), np.concatenate(self._out)

    def bound(self, *, delta: float, confidence: float = 0.95, test: str = "gaussian", claim: float | None = None) -> GaussianStepBound:
        """Per-step lower bound on the Gaussian step the observations so far were drawn from (:func:`~privaudit.stats.gaussian_steps.gaussian_step_bound`).

        ``test="order-statistics"`` designs for ``claim``, the per-step μ the
        claim states (default 1/σ read from the optimizer); its coins come from the auditor's seed.
        """
        in_scores, out_scores = self.observations()
        mu = claim
        if claim is None and test != "gaussian":
            mu = claim_step_mu(None, delta, sigma_read=min(self._sigmas), sample_rate=None, num_steps=self.num_steps)
        return gaussian_step_bound(
            in_scores,
            out_scores,
            delta=check_probability(delta, "delta"),
            confidence=check_probability(confidence, "confidence"),
            test=test,
            claim=mu,
            seed=self.seed,
        )

    def threshold_bound(self, *, delta: float, confidence: float = 0.95) -> EpsilonLowerBound:
        """The former per-step bound: GDP, Clopper–Pearson at threshold 0.5, from the observations so far (for comparison)."""
        return threshold_bound(*self.observations(), delta=check_probability(delta, "delta"), confidence=check_probability(confidence, "confidence"))

    def result(
        self, *, delta: float, confidence: float = 0.95, claimed_epsilon: float | None = None, claimed_delta: float | None = None, test: str = "gaussian"
    ) -> OpacusInLoopResult:
        """:meth:`bound`, its end-to-end conversion and the verdict on the user's claim, with the seeds, settings and evidence.

        ``claimed_epsilon`` and ``claimed_delta`` (default ``delta``) are the
        user's end-to-end claim for the run, never read from the optimizer.
        Converting it needs the run's q and T: from the ``accountant`` given to
        the auditor (its history), else q from the ``data_loader`` and T the
        audited steps. ``test`` picks the per-step test (:meth:`bound`); the
        order-statistics test is designed for the claim's σ_min (σ read without a claim).
        """
        _, out_scores = self.observations()
        run = read_run(accountant=self.accountant, data_loader=self.data_loader, audited_steps=self.num_steps, strict=False)
        loader_rate = run.pop("loader_sample_rate", None)
        claim = None
        if test != "gaussian":  # the order-statistics test is designed for the claim's own step: 1/σ_min, else 1/σ read
            at = delta if claimed_delta is None else claimed_delta
            claim = claim_step_mu(claimed_epsilon, at, sigma_read=min(self._sigmas), sample_rate=run["sample_rate"], num_steps=run["run_steps"])
        bound = self.bound(delta=delta, confidence=confidence, test=test, claim=claim)
        refuted, end_to_end = refuted_run(bound, sample_rate=run["sample_rate"], num_steps=self.num_steps)
        sigmas = np.repeat(self._sigmas, [len(out) for out in self._out])
        evidence, record, checks, findings, verdict = self._judge(
            bound,
            run=run,
            loader_rate=loader_rate,
            noise_measured=float(np.std(out_scores, ddof=1)),
            unit_noise=out_scores / sigmas,
            claimed_epsilon=claimed_epsilon,
            claimed_delta=claimed_delta,
        )
        return OpacusInLoopResult(
            **self._result_fields(bound, evidence, record, checks, findings, verdict, refuted=refuted, end_to_end=end_to_end),
            ceiling=step_ceiling(bound, raise_with="more canaries per step or more audited steps"),
            threshold_bound=self.threshold_bound(delta=delta, confidence=confidence),
        )

    def _result_fields(self, bound, evidence, record, checks, findings, verdict, *, refuted: str, end_to_end) -> dict:
        """The fields every loop auditor's result holds: the bound, the design, the user's settings read, seeds, versions, evidence and verdict."""
        import opacus
        import torch

        optimizer = self.optimizer
        return dict(
            bound=bound,
            num_steps=self.num_steps,
            canaries_per_step=self.canaries_per_step,
            audit_size=self.audit_size,
            canary_norm=self.canary_norm,
            noise_multiplier=float(optimizer.noise_multiplier),
            max_grad_norm=float(optimizer.max_grad_norm),
            seed=self.seed,
            seeds=dict(self.seeds),
            framework_versions={"torch": torch.__version__, "opacus": opacus.__version__},
            evidence=evidence,
            verdict=verdict,
            flagged=(True if findings else None) if verdict is None else verdict.flagged,
            loop=record,
            loop_checks=checks,
            refuted=refuted,
            end_to_end_epsilon=end_to_end,
            conventions=self._conventions(),
        )

    def _judge(self, step_bound, *, run: dict, loader_rate, noise_measured: float, unit_noise: np.ndarray, claimed_epsilon, claimed_delta):
        """(evidence, loop record, loop checks, findings, verdict) of a per-step bound (``parameter``: μ of one Gaussian step).

        ``unit_noise``: the audit coordinates' noise in units of σ·C, which
        the noise checks read where the user's own noise could not be read.
        The end-to-end bound composes over the audited steps.
        """
        evidence = OpacusEvidence(noise_multipliers=tuple(sorted(set(self._sigmas))), noise_measured=noise_measured, audited_steps=self.num_steps, **run)
        assert self._recorder is not None  # set on the first entry, and a result needs a step
        record = self._recorder.record()
        checks = loop_checks(
            record,
            sample_rate=evidence.sample_rate,
            run_steps=evidence.run_steps,
            delta=step_bound.delta if claimed_delta is None else claimed_delta,
            sigma=min(self._sigmas),
            loader_kind=loader_kind(self.data_loader),
            seed=self.seed,
        ) + self._noise_checks(unit_noise)
        if loader_rate is not None and max(record.passes) * loader_rate != evidence.sample_rate:  # accumulated passes explain a k·q
            checks += (
                LoopCheck(
                    "accounted sampling rate",
                    f"{evidence.sample_rate:.4g} in the accountant, {loader_rate:.4g} in the data loader",
                    finding=f"the accountant recorded q = {evidence.sample_rate:.4g} but the data loader samples at {loader_rate:.4g}: "
                    "the accountant is not the one make_private set up for this loader",
                ),
            )
        findings = tuple(check.finding for check in checks if check.finding)
        verdict, evidence = opacus_verdict(
            step_bound,
            claimed_epsilon=claimed_epsilon,
            claimed_delta=claimed_delta,
            evidence=evidence,
            accountant=self.accountant,
            loop_findings=findings,
        )
        if verdict is not None:
            verdict = dataclasses.replace(verdict, findings=verdict.findings + self._shortfall_causes(verdict.findings, record, evidence))
        return evidence, record, checks, findings, verdict

    def _shortfall_causes(self, findings: tuple[str, ...], record: LoopRecord, evidence: OpacusEvidence) -> tuple[str, ...]:
        """Where σ falls short of the claim or the accountant's ε exceeds it: causes read from the accountant (steps before the audit, a CLT accountant)."""
        if not any(" is below the σ ≥ " in line or line.startswith("Opacus' accountant reports ε") for line in findings):
            return ()
        causes = []
        before = record.accountant_steps_before
        if before:
            causes.append(
                f"the accountant already held {before} of the run's {evidence.run_steps} steps when the auditor was attached: training "
                "before this block counts towards the claim. Calling make_private again on the same model and engine calibrates σ for a "
                "fresh budget while the accountant composes every step: account the whole run, or calibrate for it"
            )
        mechanism = getattr(self.accountant, "mechanism", None)
        if callable(mechanism) and mechanism() == "gdp":
            causes.append(
                "the accountant is Opacus' GDP accountant, which approximates DP-SGD by the central limit theorem and understates ε at "
                "this q and T; make_private_with_epsilon calibrated σ to it: calibrate and account with accountant='prv' or 'rdp'"
            )
        return tuple(causes)

    def _noise_checks(self, audit_noise: np.ndarray) -> tuple[LoopCheck, ...]:
        """The user's noise: drawn anew at each step, at the σ read (measured on the user's own coordinates; the audit's where σ·C is 0)."""
        sigma = float(np.median(self._sigmas))
        lengths = {len(row) for row in self._user_noise}
        if len(lengths) != 1 or len(self._user_noise) != self.num_steps:  # no noise, or parameters that changed: the audit's own coordinates
            return (noise_check(audit_noise, sigma, where="audit coordinates"),)
        user = np.stack(self._user_noise)
        reuse = noise_reuse_check(user)
        if reuse.finding:  # a repeated draw is not a sample of the noise's scale: measure it on the distinct draws
            unit = user / np.maximum(np.linalg.norm(user, axis=1, keepdims=True), np.finfo(np.float64).tiny)
            kept: list[int] = []  # rows read back as grad − summed_grad differ in rounding only: a repeat has |cosine| ≈ 1, not equal bytes
            for row, direction in enumerate(unit):
                if not kept or float(np.max(np.abs(unit[kept] @ direction))) < 0.99:
                    kept.append(row)
            user = user[kept]
        return reuse, noise_check(user.ravel(), sigma)

    def _conventions(self) -> tuple[Convention, ...]:
        optimizer = self.optimizer
        user_noise = "torch's global RNG" if optimizer.generator is None else "the optimizer's own generator"
        reduction = str(optimizer.loss_reduction)
        denominator = f"expected_batch_size = {optimizer.expected_batch_size}" if reduction == "mean" else "1"
        return (
            checked(
                "noise source",
                f"user's noise from {user_noise}; audit noise from a private generator",
                f"optimizer.generator is {'None' if optimizer.generator is None else 'set'}; add_noise called apart on the audit group with seed {self.seeds['noise']}",
            ),
            checked("loss reduction", reduction, f"optimizer.loss_reduction = {reduction!r}: observations are released · {denominator} / C"),
            checked("clipping", "flat", f"optimizer.max_grad_norm = {float(optimizer.max_grad_norm):g}, one norm for all parameters"),
        )
