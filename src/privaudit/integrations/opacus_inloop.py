"""Auditing Opacus inside the user's own training loop: the user keeps calling ``optimizer.step()``.

Inside ``with OpacusInLoopAuditor(model, optimizer, canaries_per_step=k):``
each step of the user's DPOptimizer carries ``k`` Dirac canaries of norm
``canary_norm`` · C on ``audit_size`` = 10·k audit coordinates (the
:class:`~privaudit.integrations.opacus.OpacusCanaryAuditor`'s parameter group
of learning rate 0). A forward pre-hook on the GradSampleModule reserves the
per-sample gradient buffers (so no per-sample gradient is copied), and the
optimizer's ``pre_step`` is wrapped for the block's duration: canary rows go
in before Opacus clips and noises, and the privatized audit coordinates are
read right after. On exit the parameter group, its optimizer state, the
wrapper and the hook are removed.

Training is unchanged in distribution: canary rows are zero on the model's
parameters and the batch's rows are zero on the audit coordinates, so
clipping and the model's update are as before. Bit for bit only without
noise: the audit coordinates draw noise of their own from Opacus' generator.
The observations are read as in Tight Auditing §5.2, o = released · B / C:
N(1, σ²) in a slot with a canary, N(0, σ²) in one without.
"""

from __future__ import annotations

import numpy as np

from .._core.validation import check_count, check_positive, check_probability
from .opacus import OpacusCanaryAuditor, _check_dp_optimizer, check_audit_size

__all__ = ["OpacusInLoopAuditor"]


class OpacusInLoopAuditor:
    """Observe the canary coordinates of every step of the user's own Opacus loop; a context manager.

    ``model`` is the GradSampleModule from ``make_private`` (its forward pre-hook
    sizes the per-sample gradient buffers); one forward and backward per step.
    """

    def __init__(self, model, optimizer, *, canaries_per_step: int, audit_size: int | None = None, canary_norm: float = 100.0, seed: int = 0):
        _check_dp_optimizer(optimizer)
        self.model, self.optimizer = model, optimizer
        self.canaries_per_step = check_count(canaries_per_step, "canaries_per_step", minimum=1)
        self.audit_size = check_audit_size(audit_size, canaries_per_step)
        self.canary_norm = check_positive(canary_norm, "canary_norm")
        self.rng = np.random.default_rng([seed, 3])
        self._in: list = []
        self._out: list = []
        self._core = self._hook = self._slots = None

    # -- attach and detach ---------------------------------------------------------------
    def __enter__(self):
        if self._core is not None:
            raise ValueError("this auditor is already attached")
        self._core = OpacusCanaryAuditor(self.optimizer, self.audit_size)
        self._original_pre_step = self.optimizer.pre_step
        self.optimizer.pre_step = self._pre_step  # an instance attribute, deleted on exit
        self._hook = self.model.register_forward_pre_hook(self._reserve)
        return self

    def __exit__(self, *exc):
        core, self._core = self._core, None
        self._hook.remove()
        del self.optimizer.pre_step
        groups = self.optimizer.original_optimizer.param_groups
        groups[:] = [group for group in groups if not any(p is core.audit for p in group["params"])]
        self.optimizer.original_optimizer.state.pop(core.audit, None)
        if core._reserved is not None:  # left between a forward and its step: the reserved buffers must not outlive the block
            for p, view in zip(core._reserved[2], core._reserved[3], strict=True):
                if getattr(p, "_current_grad_sample", None) is view:
                    del p._current_grad_sample
        return False

    # -- per step --------------------------------------------------------------------
    def _reserve(self, module, inputs):
        import torch

        if not (module.training and torch.is_grad_enabled()) or not inputs:
            return
        self._core.reserve(len(inputs[0]), self.canaries_per_step)

    def _pre_step(self, closure=None):
        core, k, d = self._core, self.canaries_per_step, self.audit_size
        slots = self.rng.choice(d, size=k, replace=False)
        rows = np.zeros((k, d))
        rows[np.arange(k), slots] = self.canary_norm * self.optimizer.max_grad_norm
        core.inject(rows)
        proceed = self._original_pre_step(closure)
        if proceed:  # not a skipped step: the audit coordinates were privatized
            observed = core.audit.grad.detach().cpu().numpy().astype(np.float64) * core.denominator / self.optimizer.max_grad_norm
            chosen = np.zeros(d, dtype=bool)
            chosen[slots] = True
            self._in.append(observed[chosen])
            self._out.append(observed[~chosen])
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

    def bound(self, *, delta: float, confidence: float = 0.95):
        """Per-step GDP ε lower bound (Clopper–Pearson, threshold 0.5) from the observations so far."""
        from ..stats.bounds import epsilon_lower_bound

        in_scores, out_scores = self.observations()
        return epsilon_lower_bound(
            in_scores, out_scores, delta=check_probability(delta, "delta"), method="gdp", confidence=check_probability(confidence, "confidence"), threshold=0.5
        )
