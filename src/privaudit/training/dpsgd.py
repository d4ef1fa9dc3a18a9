"""A minimal reference DP-SGD with per-example gradients, audit coordinates and injectable bugs.

Per-example gradients come from ``torch.func`` (vmap of grad over a
functional call of the model). One step: Poisson-sample a batch at rate q,
clip every example's gradient to norm C, sum, add N(0, σ²C²) to every
coordinate, divide by the expected batch size qN, and descend.

The step also carries ``audit_size`` *audit coordinates*: extra coordinates
that no real example touches, split into ``audit_groups`` equal parameter
groups. Per-example canary gradients (rows over those coordinates) join the
batch and are clipped, summed and noised with it; the step returns the
released audit coordinates for :mod:`privaudit.observation.gradient`.
The audit coordinates are also parameters (``audit_params``, zero at the
start) that every step descends like the model's, so a final-model
(hidden-state) audit reads them from the final state alone.

The bugs of Tight Auditing §6.3, for the bug detector:

* ``"clip-after-averaging"``: the sum of *unclipped* gradients is averaged,
  then clipped to C, then noised with σC/(qN);
* ``"few-noise-seeds"``: each step's noise comes from one of
  ``num_noise_seeds`` seeds;
* ``"small-noise"``: the noise is ``noise_factor`` times the claimed scale;
* ``"reused-key"``: every parameter group's noise is drawn from the same key,
  as in the JAX example the paper cites.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._core.seeding import check_seed
from .._core.validation import check_choice, check_count, check_positive
from ..models.device import require_torch

__all__ = ["BUGS", "DPSGDConfig", "ReferenceDPSGD"]

BUGS = ("none", "clip-after-averaging", "few-noise-seeds", "small-noise", "reused-key")


@dataclasses.dataclass(frozen=True)
class DPSGDConfig:
    """Hyper-parameters of the reference DP-SGD, and the bug to inject (if any).

    >>> DPSGDConfig(noise_multiplier=0.0)
    Traceback (most recent call last):
    ...
    ValueError: `noise_multiplier` must be > 0, got 0
    """

    noise_multiplier: float
    clip_norm: float = 1.0
    sampling_rate: float = 0.05
    learning_rate: float = 0.5
    bug: str = "none"
    noise_factor: float = 1.0
    num_noise_seeds: int = 100

    def __post_init__(self):
        check_positive(self.noise_multiplier, "noise_multiplier")
        check_positive(self.clip_norm, "clip_norm")
        rate = check_positive(self.sampling_rate, "sampling_rate")
        if rate > 1.0:
            raise ValueError(f"`sampling_rate` must be in (0, 1], got {rate:g}")
        check_positive(self.learning_rate, "learning_rate")
        check_choice(self.bug, "bug", BUGS)
        check_positive(self.noise_factor, "noise_factor")
        check_count(self.num_noise_seeds, "num_noise_seeds", minimum=1)


class ReferenceDPSGD:
    """DP-SGD on ``model`` over a fixed training set, with audit coordinates.

    >>> import torch
    >>> model = torch.nn.Linear(3, 2)
    >>> x, y = torch.randn(40, 3), torch.randint(0, 2, (40,))
    >>> trainer = ReferenceDPSGD(model, x, y, DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.5), audit_size=4, seed=0)
    >>> trainer.step(np.zeros((0, 4))).shape
    (4,)
    """

    def __init__(self, model, x, y, config: DPSGDConfig, *, audit_size: int = 0, audit_groups: int = 1, seed: int = 0, expected_size: float | None = None):
        torch = require_torch()
        self.torch, self.model, self.config = torch, model, config
        self.params = {name: p for name, p in model.named_parameters() if p.requires_grad}
        if not self.params:
            raise ValueError("`model` must have at least one trainable parameter, got none")
        self.x, self.y = torch.as_tensor(x), torch.as_tensor(y)
        self.audit_size = check_count(audit_size, "audit_size")
        self.audit_groups = check_count(audit_groups, "audit_groups", minimum=1)
        if self.audit_size % self.audit_groups:
            raise ValueError(f"`audit_size` must be a multiple of `audit_groups` ({audit_groups}), got {audit_size}")
        # the expected batch size, as Opacus: q times a size fixed by the design, never the realised data's (whose size would tell how many canaries are in)
        size = len(self.x) if expected_size is None else float(expected_size)
        if not size > 0:
            raise ValueError(f"`expected_size` must be > 0, got {expected_size!r}")
        self.denominator = config.sampling_rate * size
        self.seed = check_seed(seed)  # recorded: every batch and noise draw of the run comes from it
        self.generator = torch.Generator().manual_seed(self.seed)
        self._per_example = self._per_example_gradients()
        self.audit_params = np.zeros(self.audit_size)  # the audit coordinates as parameters: descended each step, read at the end

    def _per_example_gradients(self):
        torch = self.torch
        from torch.func import functional_call, grad, vmap

        def loss(params, xi, yi):
            out = functional_call(self.model, params, (xi[None],))
            return torch.nn.functional.cross_entropy(out, yi[None])

        return vmap(grad(loss), in_dims=(None, 0, 0))

    def _noise(self, shapes, std: float):
        """One Gaussian draw per parameter group, from the generator the bug dictates."""
        torch, config = self.torch, self.config
        if config.bug == "few-noise-seeds":
            key = int(torch.randint(config.num_noise_seeds, (1,), generator=self.generator))
            generator = torch.Generator().manual_seed(key)
        elif config.bug == "reused-key":
            key = int(torch.randint(2**62, (1,), generator=self.generator))
            generator = torch.Generator()
        else:
            generator = self.generator
        draws = []
        for shape in shapes:
            if config.bug == "reused-key":
                generator.manual_seed(key)
            draws.append(torch.normal(0.0, std, shape, generator=generator, dtype=torch.float64))
        return draws

    def step(self, canary_rows=None) -> np.ndarray:
        """One DP-SGD step with ``canary_rows`` (k × audit_size, or None) in the batch; returns the released audit coordinates."""
        torch, config = self.torch, self.config
        if canary_rows is None or np.size(canary_rows) == 0:
            canaries = torch.zeros((0, self.audit_size), dtype=torch.float64)
        else:
            canaries = torch.as_tensor(np.asarray(canary_rows, dtype=np.float64).reshape(-1, self.audit_size))
        batch = torch.rand(len(self.x), generator=self.generator) < config.sampling_rate
        names = list(self.params)
        if batch.any():
            per = self._per_example({k: p.detach() for k, p in self.params.items()}, self.x[batch], self.y[batch])
            rows = torch.cat([per[name].reshape(int(batch.sum()), -1) for name in names], 1).double()
        else:
            rows = torch.zeros((0, sum(p.numel() for p in self.params.values())), dtype=torch.float64)
        clip = config.clip_norm
        if config.bug == "clip-after-averaging":
            total = torch.cat([rows.sum(0), canaries.sum(0)]) / self.denominator
            total = total * min(1.0, clip / max(float(total.norm()), 1e-300))
            scale = 1.0 / self.denominator
        else:
            # data rows live on model coordinates, canary rows on audit coordinates: their norms are separate
            clipped = [r * (clip / r.norm(dim=1, keepdim=True).clamp_min(clip)) for r in (rows, canaries)]
            total = torch.cat([clipped[0].sum(0), clipped[1].sum(0)])
            scale = 1.0
        shapes = [tuple(self.params[name].shape) for name in names]
        shapes += [(self.audit_size // self.audit_groups,)] * (self.audit_groups if self.audit_size else 0)
        std = config.noise_multiplier * clip * scale * (config.noise_factor if config.bug == "small-noise" else 1.0)
        noisy = total + torch.cat([n.reshape(-1) for n in self._noise(shapes, std)])
        if config.bug != "clip-after-averaging":
            noisy = noisy / self.denominator
        offset = 0
        with torch.no_grad():
            for name in names:
                p = self.params[name]
                p -= config.learning_rate * noisy[offset : offset + p.numel()].reshape(p.shape).to(p.dtype)
                offset += p.numel()
        released = noisy[offset:].numpy()
        self.audit_params -= config.learning_rate * released
        return released
