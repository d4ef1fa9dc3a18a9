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

import numpy as np

from ..models.device import require_torch
from .._core.validation import check_count

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
        self._buffers, self._buffer_params, self._capacity = [], [], 0  # reserve()'s per-sample gradient buffers, one per model parameter
        self._reserved = None  # (batch size, canaries, parameters, the views handed to Opacus) between reserve() and step()
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

    def step(self, canary_rows) -> np.ndarray:
        torch = self.torch
        canaries = torch.from_numpy(np.ascontiguousarray(canary_rows, dtype=np.float64).reshape(-1, self.audit_size))  # cast as it is copied in
        reserved, self._reserved = self._reserved, None
        if reserved is not None and reserved[1] != len(canaries):
            raise ValueError(f"`canary_rows` must hold the {reserved[1]} rows given to reserve(), got {len(canaries)}")
        if reserved is not None and all(p.grad_sample is view for p, view in zip(reserved[2], reserved[3], strict=True)):
            batch = reserved[0]
        else:  # no reserve(), or Opacus did not use the buffers: append zero rows
            model_params = self._model_params()
            batch = model_params[0].grad_sample.shape[0]
            for p in model_params:
                if hasattr(p, "_current_grad_sample"):
                    del p._current_grad_sample
                p.grad_sample = torch.cat([p.grad_sample, p.grad_sample.new_zeros((len(canaries), *p.grad_sample.shape[1:]))])
        self.audit.grad_sample = self._audit_grad_sample(batch, canaries)
        self.optimizer.step()
        return self.audit.grad.detach().numpy().astype(np.float64)


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
