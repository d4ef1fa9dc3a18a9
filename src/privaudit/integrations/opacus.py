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
called before ``backward()``, avoids the copy: it gives each parameter the
zero buffer of ``batch + canaries`` rows that Opacus' backward hook then adds the
batch's per-sample gradients into (Opacus accumulates into an existing
``_current_grad_sample``). This reads an internal of Opacus, so :meth:`step`
checks the row count and falls back to the copy when the buffer was not used.
"""

from __future__ import annotations

import numpy as np

from ..models._torch import require_torch
from ..stats._validation import check_count

__all__ = ["OpacusCanaryAuditor", "opacus_release"]


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

    @property
    def denominator(self) -> float:
        if self.optimizer.loss_reduction == "mean":
            return float(self.optimizer.expected_batch_size)  # one backward pass per step
        return 1.0

    def _model_params(self):
        return [p for p in self.optimizer.params if p is not self.audit and p.requires_grad]

    def reserve(self, batch_size: int, num_canaries: int) -> None:
        """Optional, before ``backward()``: size the per-sample gradient buffers for the canaries."""
        self._reserved_rows = batch_size + num_canaries
        for p in self._model_params():
            p._current_grad_sample = p.new_zeros((self._reserved_rows, *p.shape))

    def step(self, canary_rows) -> np.ndarray:
        torch = self.torch
        rows = torch.as_tensor(np.asarray(canary_rows, dtype=np.float32).reshape(-1, self.audit_size))
        model_params = self._model_params()
        reserved, self._reserved_rows = getattr(self, "_reserved_rows", None), None
        if reserved is not None and all(p.grad_sample.shape[0] == reserved for p in model_params):
            batch = reserved - len(rows)
        else:  # no reserve(), or Opacus did not use the buffers: append zero rows
            batch = model_params[0].grad_sample.shape[0]
            for p in model_params:
                if hasattr(p, "_current_grad_sample"):
                    del p._current_grad_sample
                p.grad_sample = torch.cat([p.grad_sample, p.grad_sample.new_zeros((len(rows), *p.grad_sample.shape[1:]))])
        self.audit.grad_sample = torch.cat([torch.zeros((batch, self.audit_size)), rows])
        self.optimizer.step()
        return self.audit.grad.detach().double().numpy().copy()


def _forever(data_loader):
    while True:  # a fresh pass each time: Poisson batches are re-drawn, not replayed
        yield from data_loader


def opacus_release(model, optimizer, data_loader, loss_fn, audit_size: int):
    """A ``release(rows)`` callable for :func:`~privaudit.audits.whitebox.collect_gradient_observations`.

    Each call trains one Opacus step on the next batch of ``data_loader``
    (cycling) with the canary rows in the batch. Returns (release, auditor).
    """
    auditor = OpacusCanaryAuditor(optimizer, audit_size)
    batches = _forever(data_loader)

    def release(rows):
        x, y = next(batches)
        optimizer.zero_grad()
        auditor.reserve(len(x), len(rows))
        loss_fn(model(x), y).backward()
        return auditor.step(rows)

    return release, auditor
