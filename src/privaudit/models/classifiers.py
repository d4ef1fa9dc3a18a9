"""Small reference classifiers for DP-SGD audits on the embedded datasets.

Every layer with trainable parameters (``Linear``, ``Conv2d``) is one that
Opacus' ``GradSampleModule`` computes per-example gradients for; there is no
BatchNorm or other layer that mixes examples of a batch. Every model takes
flat input of shape (N, input_dim); the CNN reshapes it to its image shape
itself (and also accepts (N, C, H, W) images).
"""

from __future__ import annotations

import math
from typing import Any

from .._core.validation import check_choice, check_count
from .device import require_torch, seeded_torch

__all__ = ["ARCHITECTURES", "build_classifier", "count_parameters"]

ARCHITECTURES = ("linear", "mlp", "cnn")


def _check_image_shape(image_shape: Any, input_dim: int) -> tuple[int, int, int]:
    message = f"`image_shape` must be (channels, height, width) of positive integers, got {image_shape!r}"
    try:
        shape = tuple(image_shape)
    except TypeError as error:
        raise ValueError(message) from error
    if len(shape) != 3:
        raise ValueError(message)
    try:
        channels, height, width = (check_count(size, "image_shape", minimum=1) for size in shape)
    except ValueError as error:
        raise ValueError(message) from error
    if height < 2 or width < 2:
        raise ValueError(f"`image_shape` must have height and width >= 2 for the pooling layer, got {shape!r}")
    if channels * height * width != input_dim:
        raise ValueError(f"`image_shape` must hold `input_dim` = {input_dim} values, got {shape!r} ({math.prod(shape)} values)")
    return channels, height, width


def build_classifier(
    architecture: str,
    *,
    input_dim: int,
    num_classes: int,
    hidden: int = 64,
    depth: int = 1,
    image_shape: tuple[int, int, int] | None = None,
    seed: int = 0,
):
    """A freshly initialised classifier returning logits of shape (N, num_classes).

    ``architecture`` is one of:

    * ``"linear"``: one ``Linear(input_dim, num_classes)`` (multinomial
      logistic regression);
    * ``"mlp"``: ``depth`` hidden layers of width ``hidden``, each ``Linear`` -
      ``Tanh``, then ``Linear(hidden, num_classes)``; ``depth=1`` is
      ``Linear(input_dim, hidden)`` - ``Tanh`` - ``Linear(hidden, num_classes)``;
    * ``"cnn"``: ``Conv2d(C, 8, 3, padding=1)`` - ``Tanh`` - ``AvgPool2d(2)`` -
      ``Flatten`` - ``Linear(8 * (H // 2) * (W // 2), num_classes)``; needs
      ``image_shape`` = (C, H, W) with C * H * W == ``input_dim``.

    Weights are drawn from ``torch.manual_seed(seed)`` inside
    ``torch.random.fork_rng``, so the same ``seed`` gives the same weights and
    the caller's global random state is left untouched. Needs PyTorch.

    >>> import torch
    >>> model = build_classifier("cnn", input_dim=64, num_classes=10, image_shape=(1, 8, 8))
    >>> model(torch.zeros(5, 64)).shape
    torch.Size([5, 10])
    >>> count_parameters(model)
    1370
    >>> count_parameters(build_classifier("mlp", input_dim=30, num_classes=2, hidden=16))
    530
    >>> count_parameters(build_classifier("mlp", input_dim=30, num_classes=2, hidden=16, depth=3))
    1074
    >>> build_classifier("resnet", input_dim=30, num_classes=2)
    Traceback (most recent call last):
    ...
    ValueError: `architecture` must be one of 'linear', 'mlp', 'cnn', got 'resnet'
    """
    check_choice(architecture, "architecture", ARCHITECTURES)
    input_dim = check_count(input_dim, "input_dim", minimum=1)
    num_classes = check_count(num_classes, "num_classes", minimum=2)
    hidden = check_count(hidden, "hidden", minimum=1)
    depth = check_count(depth, "depth", minimum=1)
    seed = check_count(seed, "seed")
    if architecture == "cnn":
        if image_shape is None:
            raise ValueError("`image_shape` must be given as (channels, height, width) for the 'cnn' architecture")
        channels, height, width = _check_image_shape(image_shape, input_dim)

    torch = require_torch()
    nn = torch.nn
    with seeded_torch(seed):
        if architecture == "linear":
            model = nn.Sequential(nn.Flatten(), nn.Linear(input_dim, num_classes))
        elif architecture == "mlp":
            widths = [input_dim] + [hidden] * depth
            layers = [nn.Flatten()]
            for width_in, width_out in zip(widths[:-1], widths[1:]):
                layers += [nn.Linear(width_in, width_out), nn.Tanh()]
            model = nn.Sequential(*layers, nn.Linear(hidden, num_classes))
        else:
            model = nn.Sequential(
                nn.Flatten(),
                nn.Unflatten(1, (channels, height, width)),
                nn.Conv2d(channels, 8, 3, padding=1),
                nn.Tanh(),
                nn.AvgPool2d(2),
                nn.Flatten(),
                nn.Linear(8 * (height // 2) * (width // 2), num_classes),
            )
    return model


def count_parameters(model) -> int:
    """The number of trainable (``requires_grad``) parameter values of any ``torch.nn.Module``.

    >>> import torch
    >>> count_parameters(torch.nn.Linear(3, 2))
    8
    >>> count_parameters(torch.nn.Tanh())
    0
    """
    return int(sum(parameter.numel() for parameter in model.parameters() if parameter.requires_grad))
