"""Input canaries optimised by metagradient descent (Boglioni, Liu, Ilyas and Wu, arXiv 2507.15836).

The auditor owns its canaries' pixels. Each meta step draws a fresh random
half of the canaries as "in", trains a surrogate on the data plus those,
and moves every canary's features one signed step against the metagradient
of the surrogate objective

    φ(C) = mean over canaries of s_i · loss(θ_T(C), c_i),  s_i = +1 in, -1 out,

so that training on a canary lowers its own loss as much as it can relative
to the canaries left out: the membership signal the black-box one-run audit
reads from the final model. Each meta step trains on a split and on its
complement and averages the two φ (antithetic splits; a deviation from the
paper, which trains on one split): the complement has the split's law, so
the expected metagradient is the paper's, but each canary's own term becomes
its loss when in minus its loss when out, instead of ± its loss, a sign
drawn afresh each step that a signed update turns into a random walk.
θ_T(C) is T steps of full-batch gradient descent, unrolled and
differentiated exactly by autograd (the paper's REPLAY computes the same
metagradient in less memory, which the small models here do not need).

Choices, written down because the paper leaves them to the setting:

* **The surrogate is non-private** (the paper's choice: canaries made on
  non-private training transfer to DP-SGD): full-batch gradient descent on
  the summed loss over ``divisor``, the step's expected batch. With
  ``clip_norm`` set, per-example gradients are clipped first, as DP-SGD's
  are (about seven times slower; in a pilot on the digits audit, seed 0
  with one split a step, it gave no better canaries, so the audit leaves
  it off).
* **Its start** is the model's own weights in every meta step
  (``start="given"``, for an auditor who owns the start, as privaudit's own
  trainer and the worst-case start do) or a fresh draw of the model's layers
  in each (``start="fresh"``, the paper's: ``reset_parameters`` of every
  layer, under a seed from the meta-step's generator).
* **Features stay in ``bounds``**, by default the data's global range (its
  least and greatest feature value, not each feature's own), so a canary
  remains an input of the pipeline's kind; a feature that is constant in
  the data may move within that range.
* **The surrogate runs a copy of the model in eval mode**: no dropout draw
  and no update of a normalisation layer's running statistics, so the
  caller's model and torch's global generator are left as they were.

Validity: the canaries are fixed before the audit draws which of them are
included, from the data and the auditor's own seed alone, so the one-run
tests hold for them as for any fixed canaries (Steinke et al.'s theorem
needs only the random inclusion).

>>> import numpy as np, torch
>>> torch.manual_seed(0) is not None
True
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 3))
>>> rng = np.random.default_rng(0)
>>> x, y = rng.random((40, 4), dtype=np.float32), rng.integers(0, 3, 40)
>>> out = optimise_input_canaries(model, x, y, x[:6], (y[:6] + 1) % 3, meta_steps=3, train_steps=5,
...     learning_rate=0.5, clip_norm=1.0, step_size=0.05, bounds=(0.0, 1.0), seed=0)
>>> out.canary_x.shape, bool(out.canary_x.min() >= 0.0 and out.canary_x.max() <= 1.0), len(out.objective)
((6, 4), True, 3)
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .._core.resources import check_memory
from .._core.validation import check_choice, check_count, check_positive
from ..models.device import require_torch, seeded_torch
from .inputs import _trainable, as_examples

__all__ = ["STARTS", "OptimisedCanaries", "optimise_input_canaries", "surrogate_memory", "surrogate_objective"]

STARTS = ("given", "fresh")


@dataclasses.dataclass(frozen=True)
class OptimisedCanaries:
    """The optimised features, the objective at each meta step (before its update) and the settings that made them."""

    canary_x: np.ndarray
    objective: tuple[float, ...]
    settings: dict

    def to_dict(self) -> dict:
        """The settings and the objective's trace (the features are the audit's canaries, saved with them)."""
        return dict(self.settings, objective_first=self.objective[0], objective_last=self.objective[-1])


def _check_resettable(model) -> None:
    """Refuse ``start="fresh"`` for a model with a trainable parameter that no layer's ``reset_parameters`` draws anew."""
    drawn = {id(p) for layer in model.modules() if hasattr(layer, "reset_parameters") for p in layer.parameters(recurse=False)}
    kept = [name for name, p in model.named_parameters() if p.requires_grad and id(p) not in drawn]
    if kept:
        raise ValueError(
            f"`start` 'fresh' draws every trainable parameter anew through its layer's reset_parameters; none draws {', '.join(kept[:3])} (use start='given')"
        )


def _fresh_parameters(model, seed: int):
    fresh = copy.deepcopy(model)
    with seeded_torch(seed):
        for layer in fresh.modules():
            if hasattr(layer, "reset_parameters"):
                layer.reset_parameters()
    return _trainable(fresh)


def surrogate_memory(model, example, *, rows: int, canaries: int, train_steps: int, clip_norm: float | None) -> int:
    """Bytes the unrolled surrogate holds at its peak: an upper estimate, checked before any meta step.

    Autograd keeps every train step of both antithetic splits alive until the
    metagradient is taken. Each step holds, for each of its examples (the
    ``rows`` of data and the larger half of the ``canaries``), a multiple of
    what the model's layers output for one example (``example``, one input's
    features, measured by forward hooks), and with ``clip_norm`` of the
    trainable parameters too (a per-example gradient). The multiple is 2.5:
    the tensors autograd saves come to about 1.6 (``tests/test_metagradient_canaries.py``
    measures them), and a step's temporaries take more. The data and
    canaries, twice over (each split concatenates them), are added. On MLPs
    of 64 to 1,024 hidden units, 200 to 4,000 rows and 10 to 100 steps, with
    and without clipping, the resident memory's peak was 0.65 to 0.74 of
    this estimate.

    >>> import torch
    >>> mlp = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    >>> # 4 B × (2 splits × 5 steps × 12 rows × 2.5 × (3 + 3 + 2) + 2 × 14 rows × 4 features)
    >>> surrogate_memory(mlp, torch.zeros(4), rows=10, canaries=4, train_steps=5, clip_norm=None)
    10048
    """
    torch = require_torch()
    outputs: list[int] = []

    def count(_layer, _inputs, out):
        outputs.append(sum(t.numel() for t in (out if isinstance(out, (tuple, list)) else (out,)) if torch.is_tensor(t)))

    probe = copy.deepcopy(model).eval()  # the hooks go on a copy: the caller's module is left as it was
    for layer in probe.modules():
        if not list(layer.children()):
            layer.register_forward_hook(count)
    with torch.no_grad():
        probe(example[None])
    params = _trainable(model)
    per_example = sum(outputs) + (sum(p.numel() for p in params.values()) if clip_norm is not None else 0)
    itemsize = next(iter(params.values())).element_size()
    held = 2 * train_steps * (rows + (canaries + 1) // 2) * per_example * 5 // 2
    return itemsize * (held + 2 * (rows + canaries) * example.numel())


def surrogate_objective(model, params, x, y, canary_x, canary_y, included, *, train_steps: int, learning_rate: float, clip_norm, divisor: float):
    """φ for one split: train from ``params`` on (x, y) plus the included canaries, then mean(±loss) over every canary (a torch scalar).

    Differentiable in ``canary_x`` (a tensor); the surrogate trainer is full-batch
    gradient descent with per-example clipping to ``clip_norm`` (None: none).
    """
    torch = require_torch()
    from torch.func import functional_call, grad, vmap

    def example_loss(values, xi, yi):
        return torch.nn.functional.cross_entropy(functional_call(model, values, (xi[None],)), yi[None])

    per_example = vmap(grad(example_loss), in_dims=(None, 0, 0))
    params = {name: p.detach().clone().requires_grad_(True) for name, p in params.items()}  # the start is a constant of φ
    features = torch.cat([x, canary_x[included]])
    labels = torch.cat([y, canary_y[included]])
    for _ in range(train_steps):
        if clip_norm is None:
            loss = torch.nn.functional.cross_entropy(functional_call(model, params, (features,)), labels, reduction="sum") / divisor
            update = dict(zip(params, torch.autograd.grad(loss, list(params.values()), create_graph=True), strict=True))
        else:
            grads = per_example(params, features, labels)
            norms = torch.sqrt(sum((g.reshape(len(labels), -1) ** 2).sum(1) for g in grads.values()).clamp_min(1e-24))  # no NaN at 0
            scale = (clip_norm / norms).clamp(max=1.0)
            update = {name: (g * scale.view(-1, *([1] * (g.dim() - 1)))).sum(0) / divisor for name, g in grads.items()}
        params = {name: p - learning_rate * update[name] for name, p in params.items()}
    losses = torch.nn.functional.cross_entropy(functional_call(model, params, (canary_x,)), canary_y, reduction="none")
    signs = included.to(losses.dtype) * 2 - 1
    return (signs * losses).mean()


def optimise_input_canaries(
    model,
    x,
    y,
    canary_x,
    canary_y,
    *,
    meta_steps: int = 200,
    train_steps: int = 100,
    learning_rate: float = 0.5,
    clip_norm: float | None = None,
    divisor: float | None = None,
    step_size: float = 0.02,
    bounds: tuple[float, float] | None = None,
    start: str = "given",
    seed: int = 0,
    progress=None,
) -> OptimisedCanaries:
    """Optimise the features of the canaries (canary_x, canary_y) for a black-box membership audit of training on (x, y).

    ``divisor`` is the surrogate step's denominator (None: the data plus half
    the canaries, the expected batch of full-batch training with inclusion
    probability ½); ``bounds`` the features' allowed range (None: the data's
    own least and greatest value). Nothing passed in is changed (the
    surrogate trains a copy of ``model`` in eval mode), and every draw
    (splits, fresh starts) comes from generators seeded with ``seed``, so
    torch's and numpy's global states are untouched.
    """
    torch = require_torch()
    meta_steps = check_count(meta_steps, "meta_steps", minimum=1)
    train_steps = check_count(train_steps, "train_steps", minimum=1)
    learning_rate = check_positive(learning_rate, "learning_rate")
    if clip_norm is not None:
        clip_norm = check_positive(clip_norm, "clip_norm")
    step_size = check_positive(step_size, "step_size")
    check_choice(start, "start", STARTS)
    seed = check_count(seed, "seed")
    params = _trainable(model)  # detached: the surrogate starts from copies
    model = copy.deepcopy(model).eval()  # the surrogate's: the caller's module, its mode and buffers stay as they were
    if start == "fresh":
        _check_resettable(model)
    dtype = next(iter(params.values())).dtype
    features, labels = as_examples(x, y, dtype)
    canaries, canary_labels = as_examples(canary_x, canary_y, dtype)
    for name, values in (("x", features), ("canary_x", canaries)):
        if not bool(torch.isfinite(values).all()):
            raise ValueError(f"`{name}` must hold finite features only, got a NaN or an infinity")
    if tuple(canaries.shape[1:]) != tuple(features.shape[1:]):
        raise ValueError(f"`canary_x` must hold examples of shape {tuple(features.shape[1:])}, got {tuple(canaries.shape[1:])}")
    if len(canaries) < 2:
        raise ValueError(f"`canary_x` must hold at least 2 canaries (a split needs both sides), got {len(canaries)}")
    low, high = (float(features.min()), float(features.max())) if bounds is None else (float(bounds[0]), float(bounds[1]))
    if not low < high:
        raise ValueError(f"`bounds` must be (low, high) with low < high, got ({low:g}, {high:g})")
    size = len(labels) + len(canary_labels) / 2 if divisor is None else check_positive(divisor, "divisor")
    check_memory(
        surrogate_memory(model, features[0], rows=len(labels), canaries=len(canary_labels), train_steps=train_steps, clip_norm=clip_norm),
        f"the surrogate unrolled over `train_steps` = {train_steps} steps on {len(labels)} examples" + (" with `clip_norm`" if clip_norm is not None else ""),
    )
    generator = torch.Generator().manual_seed(seed)
    current = canaries.clone().clamp(low, high)
    trace = []
    for step in range(meta_steps):
        included = torch.zeros(len(current), dtype=torch.bool)
        included[torch.randperm(len(current), generator=generator)[: len(current) // 2]] = True
        start_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
        values = params if start == "given" else _fresh_parameters(model, start_seed)
        leaf = current.clone().requires_grad_(True)
        objective = sum(
            surrogate_objective(
                model, values, features, labels, leaf, canary_labels, side,
                train_steps=train_steps, learning_rate=learning_rate, clip_norm=clip_norm, divisor=size,
            )
            for side in (included, ~included)
        ) / 2  # fmt: skip
        (metagradient,) = torch.autograd.grad(objective, leaf)
        if not (torch.isfinite(objective) and torch.isfinite(metagradient).all()):
            raise ValueError(
                f"the surrogate training diverged at meta step {step} (its objective or metagradient is not finite); lower `learning_rate` "
                f"(got {learning_rate:g}) or `train_steps` (got {train_steps})"
            )
        current = (current - step_size * metagradient.sign()).clamp(low, high).detach()
        trace.append(float(objective.detach()))
        if progress is not None:
            progress("optimising the canaries (metagradient descent)", completed=step + 1, total=meta_steps)
    settings = {
        "method": "metagradient descent (Boglioni et al. 2025): signed steps on the unrolled in-minus-out loss gap",
        "meta_steps": meta_steps,
        "train_steps": train_steps,
        "learning_rate": learning_rate,
        "clip_norm": clip_norm,
        "divisor": float(size),
        "step_size": step_size,
        "bounds": [low, high],
        "start": start,
        "seed": seed,
    }
    dtype_out = np.result_type(np.asarray(canary_x).dtype, np.float32)  # optimised features are not whole numbers
    return OptimisedCanaries(canary_x=current.numpy().astype(dtype_out, copy=False), objective=tuple(trace), settings=settings)
