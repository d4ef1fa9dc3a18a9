"""White-box observations of DP-SGD with an input-space canary (Tight Auditing Algorithm 2, §5.3).

Threat model: white-box, the adversary sees every update and inserts one
*input* (x', y') instead of a free gradient. Its gradient
g' = clip(∇_θ l(θ, (x', y'))) is then whatever the model makes of it, and it
shares the model coordinates with the rest of the batch.

Per step (one per-example gradient pass over one Poisson batch B, rate q):

* S = Σ_{i ∈ B} clip_C(∇_θ l(θ, (x_i, y_i))), the clipped data gradients;
* g' the canary's clipped gradient and u = ∇_θ l(θ, (x', y')) / |·| its direction;
* out world: R_out = S + N(0, σ²C²I);
* in world: R_in = S + b·g' + N(0, σ²C²I), b ~ Bernoulli(q_c), with noise
  independent of the out world's;
* observations, one "in" and one "out" per step:
  ``score="dot"``: o = <u, R>/C (the paper's);
  ``score="debiased"``: o = <u, R - S>/C, for an adversary who also knows
  the rest of the batch (the strongest white-box adversary, and the one that
  makes the observations N(b·|g'|/C, σ²) against N(0, σ²));
* the model descends along R_out/(qN), i.e. it trains on D alone.

**The "dot" score is weaker than a gradient canary.** It carries the batch's
projection <u, S>/C in both worlds: the in and out means are shifted by the
same unknown, step-dependent amount, which acts as extra noise (and can put
both worlds on the same side of a fixed threshold). This is why input-space
canaries give looser bounds than gradient canaries on free coordinates, and
why Algorithm 3's crafted canary (:func:`privaudit.canaries.inputs.crafted_canary`)
looks for an input whose gradient is orthogonal to the mean data gradient:
it aims to make <u, S> small.

**Deviation from the paper.** The paper's Algorithm 2 privatizes two batches
per step (B_t for the out observation, B'_t plus the canary for the in
observation). Here both worlds share the one batch sum S and draw two
independent noises: each side has the same law as in the paper (a Poisson
batch, its clipped sum, fresh Gaussian noise), at half the gradient cost;
the in and out observations of one step are correlated through S, which the
"debiased" score removes.

>>> import numpy as np, torch
>>> torch.manual_seed(0) is not None
True
>>> model = torch.nn.Linear(3, 2)
>>> x, y = np.random.default_rng(0).random((50, 3), dtype=np.float32), np.arange(50) % 2
>>> obs = collect_input_observations(model, x, y, x[0], 1, noise_multiplier=1.0, clip_norm=1.0,
...     sampling_rate=0.2, learning_rate=0.1, num_steps=5, seed=0)
>>> obs.in_scores.shape, obs.out_scores.shape, obs.canary_rate
((5,), (5,), 1.0)
>>> collect_input_observations(model, x, y, x[0], 1, noise_multiplier=1.0, clip_norm=1.0,
...     sampling_rate=0.2, learning_rate=0.1, num_steps=5, canary_rate=0.0, seed=0)
Traceback (most recent call last):
...
ValueError: `canary_rate` must be > 0, got 0
"""

from __future__ import annotations

import numpy as np

from .._core.validation import check_choice, check_count, check_positive
from ..canaries.inputs import as_examples
from ..models.device import require_torch
from .gradient import GradientObservations, check_canary_rate

__all__ = ["INPUT_SCORES", "collect_input_observations"]

INPUT_SCORES = ("dot", "debiased")


def collect_input_observations(
    model,
    x,
    y,
    canary_x,
    canary_y,
    *,
    noise_multiplier: float,
    clip_norm: float,
    sampling_rate: float,
    learning_rate: float,
    num_steps: int,
    canary_rate: float = 1.0,
    score: str = "dot",
    seed: int = 0,
) -> GradientObservations:
    """Train ``model`` on (x, y) for ``num_steps`` DP-SGD steps, observing the input canary (canary_x, canary_y).

    Returns one in- and one out-observation per step, normalised so that a
    correct Gaussian mechanism gives out ~ N(0, σ²) and in ~ N(|g'|/C, σ²)
    with the "debiased" score (|g'|/C = 1 when the canary's gradient norm is
    at least C). ``model`` is updated in place. Every random draw (batches,
    canary presence, noise) comes from a ``torch.Generator`` seeded with
    ``seed``. A canary whose gradient is exactly zero has no direction; its
    observations are then pure noise projections on u = 0, i.e. 0.
    """
    torch = require_torch()
    from torch.func import functional_call, grad, vmap

    sigma = check_positive(noise_multiplier, "noise_multiplier")
    clip = check_positive(clip_norm, "clip_norm")
    rate = check_positive(sampling_rate, "sampling_rate")
    if rate > 1.0:
        raise ValueError(f"`sampling_rate` must be in (0, 1], got {rate:g}")
    learning_rate = check_positive(learning_rate, "learning_rate", allow_zero=True)
    num_steps = check_count(num_steps, "num_steps", minimum=1)
    canary_rate = check_canary_rate(canary_rate)
    check_choice(score, "score", INPUT_SCORES)
    params = {name: p for name, p in model.named_parameters() if p.requires_grad}
    if not params:
        raise ValueError("`model` must have at least one trainable parameter, got none")
    dtype = next(iter(params.values())).dtype
    features, labels = as_examples(x, y, dtype)
    canary_features = torch.as_tensor(np.asarray(canary_x), dtype=dtype)
    if tuple(canary_features.shape) != tuple(features.shape[1:]):
        raise ValueError(f"`canary_x` must have the shape of one example {tuple(features.shape[1:])}, got {tuple(canary_features.shape)}")
    canary_label = torch.as_tensor(check_count(canary_y, "canary_y"))
    seed = check_count(seed, "seed")

    def loss(values, xi, yi):
        return torch.nn.functional.cross_entropy(functional_call(model, values, (xi[None],)), yi[None])

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))
    single = grad(loss)
    names = list(params)
    size = sum(p.numel() for p in params.values())
    denominator = rate * len(features)  # the expected batch size, as Opacus
    generator = torch.Generator().manual_seed(seed)
    in_scores, out_scores = np.empty(num_steps), np.empty(num_steps)
    for step in range(num_steps):
        current = {name: p.detach() for name, p in params.items()}
        batch = torch.rand(len(features), generator=generator) < rate
        if batch.any():
            grads = per_example(current, features[batch], labels[batch])
            rows = torch.cat([grads[name].reshape(int(batch.sum()), -1) for name in names], 1).double()
            total = (rows * (clip / rows.norm(dim=1, keepdim=True).clamp_min(clip))).sum(0)
        else:
            total = torch.zeros(size, dtype=torch.float64)
        canary = torch.cat([g.reshape(-1) for g in single(current, canary_features, canary_label).values()]).double()
        norm = float(canary.norm())
        direction = canary / norm if norm > 0 else torch.zeros_like(canary)
        clipped = canary * min(1.0, clip / norm) if norm > 0 else canary
        present = bool(torch.rand(1, generator=generator) < canary_rate)
        noise_out = torch.normal(0.0, sigma * clip, (size,), generator=generator, dtype=torch.float64)
        noise_in = torch.normal(0.0, sigma * clip, (size,), generator=generator, dtype=torch.float64)
        released_out = total + noise_out
        released_in = total + (clipped if present else 0.0) + noise_in
        known = total if score == "debiased" else 0.0
        in_scores[step] = float(direction @ (released_in - known)) / clip
        out_scores[step] = float(direction @ (released_out - known)) / clip
        update = released_out / denominator
        offset = 0
        with torch.no_grad():
            for name in names:
                p = params[name]
                p -= learning_rate * update[offset : offset + p.numel()].reshape(p.shape).to(p.dtype)
                offset += p.numel()
    return GradientObservations(
        in_scores=in_scores, out_scores=out_scores, num_steps=num_steps, num_twinned_blocks=0, canary_rate=float(canary_rate), seed=seed
    )
