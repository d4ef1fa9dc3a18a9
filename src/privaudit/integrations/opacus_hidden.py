"""The hidden-state audit of the user's own Opacus loop: crafted gradients in every step, only their final sums observed.

Cebere, Bellet and Papernot (ICLR 2025) audit DP-SGD when the adversary
inserts a crafted gradient at every step but sees only the final model.
:class:`OpacusHiddenStateAuditor` does this inside the user's loop, with the
machinery of :class:`~privaudit.integrations.opacus_inloop.OpacusInLoopAuditor`
(the same wrappers of the user's DPOptimizer, the user's training and random
draws unchanged, the same loop checks):

* ``num_canaries`` Dirac canaries, each with an audit coordinate of its own
  and a fair coin drawn before training from the auditor's seed
  (:func:`~privaudit.observation.one_run.draw_inclusion`). An included
  canary is a per-sample gradient row ``canary_norm`` · C along its
  coordinate in *every* noised step (clipped by Opacus to C); an excluded one
  is never inserted. No record of the user touches the audit coordinates.
* The auditor keeps only each coordinate's running sum of the privatized
  gradients, in units of C: what the audit coordinates of plain SGD from 0
  would hold at the end, negated and rescaled. No step's release is kept.
  The sums are a post-processing of the transcript, so a test on them holds
  for DP-SGD as composed.
* The bound (:func:`~privaudit.stats.gaussian_steps.final_sum_step_bound`):
  under "every step a Gaussian step of noise σ >= σ_r" an included
  canary's sum is N(T, Σσ_t²) and an excluded one's N(0, Σσ_t²), the
  composition of T steps; the refuted per-step μ then refutes DP-SGD at the
  run's q over the audited steps, as the in-loop audit's does, and meets the
  user's claim the same way (per step and end to end). The t test is the
  default: the order-statistics test's ceiling on the sums depends on the
  number of canaries alone, so its per-step ceiling falls as 1/√T.
* Steinke et al.'s last-iterate heuristic at the σ read, q_c = 1 and the T
  audited steps is shown beside the bound, labelled a heuristic; with a
  canary in every step it is the composition's own ε, so
  ``bound_over_heuristic`` is how much of the composition the final sums
  recover.

The canaries are records the audit adds in every step (q_c = 1), not records
of the user's data sampled at q: the sums refute the Gaussian steps' σ, and
the claim is met through that σ.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._core.validation import check_count, check_probability
from ..observation.one_run import MIN_CANARIES, draw_inclusion
from ..stats.conversions import gdp_epsilon
from ..stats.gaussian_steps import final_sum_step_bound
from ..stats.last_iterate import LastIterateHeuristic, last_iterate_heuristic
from .opacus import step_ceiling
from .opacus_inloop import OpacusInLoopAuditor, OpacusInLoopResult
from .opacus_verdict import claim_step_mu, read_run, refuted_run

__all__ = ["THREAT_MODEL", "OpacusHiddenStateAuditor", "OpacusHiddenStateResult"]

THREAT_MODEL = "hidden state: gradient canaries in every step of the user's own Opacus loop, only their final sums observed"


@dataclasses.dataclass(frozen=True)
class OpacusHiddenStateResult(OpacusInLoopResult):
    """An :class:`~privaudit.integrations.opacus_inloop.OpacusInLoopResult` read from the final sums alone.

    ``bound`` is per step (μ_T/√T of the sums' test); ``composed_epsilon``
    the ε(δ) of the T audited steps composed with a canary in each (μ_T-GDP),
    the number to hold against ``heuristic``; ``num_canaries`` canaries, of
    which ``canaries_per_step`` were included (each in every step).
    ``heuristic`` is Steinke et al.'s last-iterate heuristic at the σ read,
    q_c = 1 and the audited steps: never a bound, never a claim.
    """

    num_canaries: int = 0
    composed_epsilon: float = 0.0
    heuristic: LastIterateHeuristic | None = None
    bound_over_heuristic: float | None = None
    threat_model: str = THREAT_MODEL


class OpacusHiddenStateAuditor(OpacusInLoopAuditor):
    """Insert ``num_canaries`` gradient canaries (each in or out by a fair coin) in every step of the user's loop; observe their final sums.

    Used as :class:`~privaudit.integrations.opacus_inloop.OpacusInLoopAuditor`
    is (a context manager around the user's own steps); ``result()`` bounds
    from the final sums only.

    >>> import opacus, torch
    >>> model = opacus.GradSampleModule(torch.nn.Linear(4, 2))
    >>> optimizer = opacus.optimizers.DPOptimizer(
    ...     torch.optim.SGD(model.parameters(), lr=0.1), noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=8
    ... )
    >>> with OpacusHiddenStateAuditor(model, optimizer, num_canaries=400, seed=7) as auditor:
    ...     for _ in range(4):  # the user's own loop
    ...         optimizer.zero_grad()
    ...         model(torch.ones(8, 4)).sum().backward()
    ...         optimizer.step()
    >>> result = auditor.result(delta=1e-5)
    >>> result.num_steps, result.num_canaries, result.bound.num_in == int(auditor.included.sum()), round(result.heuristic.epsilon, 2)
    (4, 400, True, 10.0)
    >>> 0.0 < result.composed_epsilon < result.heuristic.epsilon
    True
    """

    def __init__(self, model, optimizer, *, num_canaries: int = 4000, canary_norm: float = 100.0, seed: int = 0, accountant=None, data_loader=None):
        self._setup(model, optimizer, canary_norm=canary_norm, seed=seed, accountant=accountant, data_loader=data_loader)
        self.num_canaries = self.audit_size = check_count(num_canaries, "num_canaries", minimum=MIN_CANARIES)
        self.included = draw_inclusion(self.num_canaries, 0.5, seed=self.seeds["canaries"])  # the coins, fixed before any step
        self.canaries_per_step = int(self.included.sum())
        if min(self.canaries_per_step, self.num_canaries - self.canaries_per_step) < 2:  # refused now, not after the user's training
            raise ValueError(
                f"`num_canaries` {self.num_canaries} with `seed` {self.seed} puts {self.canaries_per_step} canaries in and "
                f"{self.num_canaries - self.canaries_per_step} out: the bound needs at least 2 on each side; use more canaries (hundreds)"
            )
        self._rows, self._rows_norm = None, 0.0  # the included canaries' rows, the same at every step: built once per clip norm
        self._sums = np.zeros(self.num_canaries)
        self._steps = 0

    def _canary_rows(self, dtype):
        """Every included canary, one row each, along its own coordinate."""
        import torch

        norm = self.canary_norm * float(self.optimizer.max_grad_norm)
        if self._rows is None or self._rows.dtype != dtype or self._rows_norm != norm:
            members, self._rows_norm = np.flatnonzero(self.included), norm
            self._rows = torch.zeros((members.size, self.audit_size), dtype=dtype)
            self._rows[np.arange(members.size), members] = norm
        return self._rows.detach(), True  # a fresh tensor object on the same storage: Opacus marks the one it processed

    def _observe(self, observed: np.ndarray, design) -> None:
        self._sums += observed  # only the running sum: no step's release is kept
        self._steps += 1

    @property
    def num_steps(self) -> int:
        return self._steps

    def final_sums(self) -> np.ndarray:
        """Each canary's sum of its coordinate's privatized gradients over the noised steps, in units of C (a copy)."""
        if not self._steps:
            raise ValueError("no audited step yet: call optimizer.step() inside the `with` block")
        return self._sums.copy()

    def observations(self) -> tuple[np.ndarray, np.ndarray]:
        """(included, excluded) canaries' final sums."""
        sums = self.final_sums()
        return sums[self.included], sums[~self.included]

    def bound(self, *, delta: float, confidence: float = 0.95, test: str = "gaussian", claim: float | None = None):
        """The per-step bound from the final sums (:func:`~privaudit.stats.gaussian_steps.final_sum_step_bound`); ``claim`` as in the in-loop audit."""
        mu = claim
        if claim is None and test != "gaussian":
            mu = claim_step_mu(None, delta, sigma_read=min(self._sigmas), sample_rate=None, num_steps=self.num_steps)
        return final_sum_step_bound(
            self.final_sums(),
            self.included,
            num_steps=self.num_steps,
            delta=check_probability(delta, "delta"),
            confidence=check_probability(confidence, "confidence"),
            test=test,
            claim=mu,
            seed=self.seed,  # the tie-break's stream, apart from the coins' (a child of the seed)
        )

    def threshold_bound(self, *, delta: float, confidence: float = 0.95):
        return None  # the in-loop audit's former per-step bound reads every step: nothing of it is left in the sums

    def result(
        self, *, delta: float, confidence: float = 0.95, claimed_epsilon: float | None = None, claimed_delta: float | None = None, test: str = "gaussian"
    ) -> OpacusHiddenStateResult:
        """The bound from the final sums, its end-to-end conversion, the heuristic beside it, and the verdict on the user's claim."""
        steps = self.num_steps
        _, out_sums = self.observations()
        run = read_run(accountant=self.accountant, data_loader=self.data_loader, audited_steps=steps, strict=False)
        loader_rate = run.pop("loader_sample_rate", None)
        claim = None
        if test != "gaussian":
            at = delta if claimed_delta is None else claimed_delta
            claim = claim_step_mu(claimed_epsilon, at, sigma_read=min(self._sigmas), sample_rate=run["sample_rate"], num_steps=run["run_steps"])
        bound = self.bound(delta=delta, confidence=confidence, test=test, claim=claim)
        refuted, end_to_end = refuted_run(bound, sample_rate=run["sample_rate"], num_steps=steps)
        spread = math.sqrt(float(np.sum(np.square(self._sigmas))))  # an excluded sum is N(0, Σσ_t²) at the σ read
        evidence, record, checks, findings, verdict = self._judge(
            bound,
            run=run,
            loader_rate=loader_rate,
            noise_measured=float(np.std(out_sums, ddof=1)) / math.sqrt(steps),
            unit_noise=out_sums / spread if spread > 0.0 else out_sums,
            claimed_epsilon=claimed_epsilon,
            claimed_delta=claimed_delta,
        )
        composed = float(gdp_epsilon(bound.parameter * math.sqrt(steps), bound.delta)) if bound.parameter > 0.0 else 0.0
        sigma_read = min(self._sigmas)
        heuristic = last_iterate_heuristic(sigma_read, sampling_prob=1.0, num_steps=steps, delta=bound.delta) if sigma_read > 0.0 else None
        return OpacusHiddenStateResult(
            **self._result_fields(bound, evidence, record, checks, findings, verdict, refuted=refuted, end_to_end=end_to_end),
            ceiling=step_ceiling(bound, raise_with="more canaries (more audited steps lower the order-statistics test's per-step ceiling)"),
            threshold_bound=None,
            num_canaries=self.num_canaries,
            composed_epsilon=composed,
            heuristic=heuristic,
            bound_over_heuristic=None if heuristic is None or not 0.0 < heuristic.epsilon < math.inf else composed / heuristic.epsilon,
        )
