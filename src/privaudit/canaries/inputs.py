"""Input-space canaries for white-box audits of DP-SGD (Tight Auditing §5.3, Algorithm 3, Appendix C.3).

An input-space canary is one example (x', y') whose clipped gradient the
adversary hopes to find in a privatized DP-SGD update. The four strategies of
the paper, each ``maker(model, x, y, *, seed, ...) -> (x_canary, y_canary)``
with ``x_canary`` a NumPy array holding one example's features (the shape of a
row of ``x``) and ``y_canary`` an ``int`` label:

* :func:`mislabeled_canary`: a random example of ``x`` with a random wrong label;
* :func:`blank_canary`: the all-zero input with a random label;
* :func:`adversarial_canary`: projected gradient ascent (L-inf PGD) on the
  loss of a random example's own label, kept in the data's value range;
* :func:`crafted_canary`: Algorithm 3, an input whose parameter gradient is
  as orthogonal as possible to the mean data gradient g_dist, so that the
  rest of a batch projects little onto it.

Every random choice comes from a ``torch.Generator`` seeded with ``seed``;
the global random state (NumPy's and PyTorch's) is never used. The model is
only read: its parameters are passed detached through ``torch.func``, so no
``.grad`` is written and the weights do not change.

>>> import torch
>>> model = torch.nn.Linear(4, 3)
>>> x, y = np.random.default_rng(0).random((20, 4), dtype=np.float32), np.arange(20) % 3
>>> x_canary, y_canary = make_input_canary("blank", model, x, y, seed=0)
>>> x_canary.tolist(), 0 <= y_canary < 3
([0.0, 0.0, 0.0, 0.0], True)
>>> make_input_canary("noise", model, x, y, seed=0)
Traceback (most recent call last):
...
ValueError: `kind` must be one of 'mislabeled', 'blank', 'adversarial', 'crafted', got 'noise'
"""

from __future__ import annotations

import numpy as np

from .._core.validation import check_choice, check_count, check_positive
from ..models.device import require_torch

__all__ = [
    "INPUT_CANARY_KINDS",
    "adversarial_canary",
    "blank_canary",
    "crafted_canary",
    "gradient_cosine",
    "make_input_canary",
    "mean_data_gradient",
    "mislabeled_canary",
]

INPUT_CANARY_KINDS = ("mislabeled", "blank", "adversarial", "crafted")


def _trainable(model) -> dict:
    """The model's trainable parameters, detached, by name; ValueError naming `model` if there are none."""
    params = {name: p.detach() for name, p in model.named_parameters() if p.requires_grad}
    if not params:
        raise ValueError("`model` must have at least one trainable parameter, got none")
    return params


def as_examples(x, y, dtype):
    """(features, labels) as tensors, after checking that ``x`` holds examples and ``y`` one label each."""
    torch = require_torch()
    features = torch.as_tensor(np.asarray(x), dtype=dtype)
    labels = torch.as_tensor(np.asarray(y), dtype=torch.long)
    if features.ndim < 2 or len(features) == 0:
        raise ValueError(f"`x` must hold at least one example (shape (n, ...)), got shape {tuple(features.shape)}")
    if labels.ndim != 1 or len(labels) != len(features):
        raise ValueError(f"`y` must be a 1-D array of {len(features)} labels, got shape {tuple(labels.shape)}")
    return features, labels


def _prepare(model, x, y):
    """(params, x tensor, y tensor, number of classes) after checking the shapes."""
    torch = require_torch()
    params = _trainable(model)
    features, labels = as_examples(x, y, next(iter(params.values())).dtype)
    with torch.no_grad():
        num_classes = int(model(features[:1]).shape[-1])
    return params, features, labels, num_classes


def _generator(seed):
    torch = require_torch()
    return torch.Generator().manual_seed(check_count(seed, "seed"))


def _random_index(n: int, generator) -> int:
    torch = require_torch()
    return int(torch.randint(n, (1,), generator=generator))


def _example_loss(model):
    """loss(params, xi, yi): cross-entropy of one example through a functional call of ``model``."""
    torch = require_torch()
    from torch.func import functional_call

    def loss(params, xi, yi):
        return torch.nn.functional.cross_entropy(functional_call(model, params, (xi[None],)), yi[None])

    return loss


def mislabeled_canary(model, x, y, *, seed: int = 0) -> tuple[np.ndarray, int]:
    """A random example of ``x`` with a label drawn uniformly among the wrong ones.

    >>> import torch
    >>> x, y = np.eye(3, dtype=np.float32), np.array([0, 1, 2])
    >>> x_canary, y_canary = mislabeled_canary(torch.nn.Linear(3, 3), x, y, seed=1)
    >>> int(np.argmax(x_canary)) != y_canary  # row i of the identity has label i
    True
    """
    _, features, labels, num_classes = _prepare(model, x, y)
    if num_classes < 2:
        raise ValueError(f"`model` must output at least 2 classes for a wrong label, got {num_classes}")
    generator = _generator(seed)
    index = _random_index(len(features), generator)
    shift = 1 + _random_index(num_classes - 1, generator)
    return features[index].numpy().copy(), int((int(labels[index]) + shift) % num_classes)


def blank_canary(model, x, y, *, seed: int = 0) -> tuple[np.ndarray, int]:
    """The all-zero input with a label drawn uniformly among the model's classes."""
    _, features, _, num_classes = _prepare(model, x, y)
    label = _random_index(num_classes, _generator(seed))
    return np.zeros(tuple(features.shape[1:]), dtype=features.numpy().dtype), int(label)


def adversarial_canary(model, x, y, *, seed: int = 0, epsilon: float = 0.1, step_size: float = 0.025, num_steps: int = 10) -> tuple[np.ndarray, int]:
    """L-inf PGD from a random example, maximising the loss of its own label.

    Each step moves by ``step_size`` along the sign of the input gradient,
    then projects onto the ``epsilon`` ball around the start and clamps to
    the data's range [min(x), max(x)]. Returns the perturbed input and the
    example's (true) label.

    >>> import torch
    >>> x, y = np.random.default_rng(0).random((10, 4), dtype=np.float32), np.arange(10) % 2
    >>> x_canary, _ = adversarial_canary(torch.nn.Linear(4, 2), x, y, seed=0, epsilon=0.05)
    >>> bool(np.min(np.abs(x_canary[None] - x).max(axis=1)) <= 0.05 + 1e-6)
    True
    """
    torch = require_torch()
    epsilon = check_positive(epsilon, "epsilon")
    step_size = check_positive(step_size, "step_size")
    num_steps = check_count(num_steps, "num_steps")
    params, features, labels, _ = _prepare(model, x, y)
    index = _random_index(len(features), _generator(seed))
    start, label = features[index], labels[index]
    low, high = features.min(), features.max()
    loss = _example_loss(model)
    current = start.clone()
    for _ in range(num_steps):
        current = current.detach().requires_grad_(True)
        (gradient,) = torch.autograd.grad(loss(params, current, label), current)
        with torch.no_grad():
            current = current + step_size * gradient.sign()
            current = torch.minimum(torch.maximum(current, start - epsilon), start + epsilon).clamp(low, high)
    return current.detach().numpy().copy(), int(label)


def _flat_gradient(loss):
    torch = require_torch()
    from torch.func import grad

    def flat(params, xi, yi):
        return torch.cat([g.reshape(-1) for g in grad(loss)(params, xi, yi).values()])

    return flat


def gradient_cosine(model, x_canary, y_canary, direction) -> float:
    """cos(∇_θ l(θ, (x', y')), direction): the quantity Algorithm 3 drives to 0 in absolute value."""
    torch = require_torch()
    params = _trainable(model)
    dtype = next(iter(params.values())).dtype
    flat = _flat_gradient(_example_loss(model))
    with torch.no_grad():
        g = flat(params, torch.as_tensor(np.asarray(x_canary), dtype=dtype), torch.as_tensor(int(y_canary)))
        direction = torch.as_tensor(np.asarray(direction), dtype=g.dtype)
        return float(torch.nn.functional.cosine_similarity(g, direction, dim=0))


def mean_data_gradient(model, x, y, *, sample_size: int | None = 256, seed: int = 0) -> np.ndarray:
    """g_dist: the flat mean loss gradient over ``sample_size`` examples of (x, y) drawn without replacement (all if None)."""
    torch = require_torch()
    from torch.func import functional_call

    params, features, labels, _ = _prepare(model, x, y)
    if sample_size is not None and check_count(sample_size, "sample_size", minimum=1) < len(features):
        chosen = torch.randperm(len(features), generator=_generator(seed))[:sample_size]
        features, labels = features[chosen], labels[chosen]
    params = {name: p.clone().requires_grad_(True) for name, p in params.items()}
    mean_loss = torch.nn.functional.cross_entropy(functional_call(model, params, (features,)), labels)
    return torch.cat([g.reshape(-1) for g in torch.autograd.grad(mean_loss, list(params.values()))]).numpy()


def crafted_canary(model, x, y, *, seed: int = 0, num_steps: int = 100, step_size: float = 1.0, sample_size: int | None = 256) -> tuple[np.ndarray, int]:
    """Algorithm 3: gradient descent on l_adv(x') = |cos(∇_θ l(θ, (x', y')), g_dist)| from a random example.

    g_dist is the mean gradient over ``sample_size`` examples of the data
    (standing in for the adversary's in-distribution sample). The input is
    moved ``num_steps`` times by ``-step_size · ∇_x' l_adv`` (the gradient of
    a gradient, through ``torch.func``), unconstrained as in the paper; the
    label stays the example's own. Returns the iterate with the smallest
    l_adv seen (the start included), so the result never scores worse than
    its start.

    >>> import torch
    >>> torch.manual_seed(0) is not None
    True
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    >>> x, y = np.random.default_rng(0).random((30, 4), dtype=np.float32), np.arange(30) % 3
    >>> x_canary, y_canary = crafted_canary(model, x, y, seed=0, num_steps=20)
    >>> x_canary.shape, y_canary in (0, 1, 2)
    ((4,), True)
    """
    torch = require_torch()
    from torch.func import grad

    num_steps = check_count(num_steps, "num_steps")
    step_size = check_positive(step_size, "step_size")
    params, features, labels, _ = _prepare(model, x, y)
    generator = _generator(seed)
    index = _random_index(len(features), generator)
    g_dist = torch.as_tensor(mean_data_gradient(model, x, y, sample_size=sample_size, seed=int(seed) + 1))
    flat = _flat_gradient(_example_loss(model))
    label = labels[index]

    def l_adv(xi):
        return torch.nn.functional.cosine_similarity(flat(params, xi, label), g_dist, dim=0).abs()

    step = grad(l_adv)
    current = features[index].clone()
    best, best_value = current, float(l_adv(current))
    for _ in range(num_steps):
        current = (current - step_size * step(current)).detach()
        value = float(l_adv(current))
        if value < best_value:
            best, best_value = current, value
    return best.numpy().copy(), int(label)


_MAKERS = {
    "mislabeled": mislabeled_canary,
    "blank": blank_canary,
    "adversarial": adversarial_canary,
    "crafted": crafted_canary,
}


def make_input_canary(kind: str, model, x, y, *, seed: int = 0, **options) -> tuple[np.ndarray, int]:
    """The input canary of ``kind`` (one of :data:`INPUT_CANARY_KINDS`); ``options`` go to its maker."""
    check_choice(kind, "kind", INPUT_CANARY_KINDS)
    return _MAKERS[kind](model, x, y, seed=seed, **options)
