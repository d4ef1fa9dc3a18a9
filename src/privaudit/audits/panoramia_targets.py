"""Targets for PANORAMIA: train the embedded ones, or load a user's model and members safely.

File formats of ``privaudit audit panoramia --model MODEL --members MEMBERS``:

* ``MODEL``: a ``torch.save``d ``state_dict`` of a model built by
  :func:`privaudit.models.classifiers.build_classifier`, loaded with
  ``torch.load(..., weights_only=True)`` (no arbitrary object is unpickled);
  beside it a JSON *architecture spec* (``--spec``, default ``MODEL`` with the
  suffix ``.json``) holding ``architecture`` ("linear", "mlp" or "cnn"),
  ``input_dim``, ``num_classes`` and, as needed, ``hidden``, ``depth`` and
  ``image_shape``;
* ``MEMBERS`` (and ``--non-members``): a ``.npz`` with arrays ``x`` (n, d)
  and ``y`` (n,) of integer labels, read with ``allow_pickle=False``, or a
  ``.csv`` (or ``.parquet``) of numbers (optional header) whose last column
  is the label (:func:`privaudit._core.readers.read_labelled`).

The model's loss is the per-example cross-entropy of its logits.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .._core.extras import require
from .._core.readers import read_labelled
from .._core.validation import check_count, check_positive
from ..models.device import require_torch

__all__ = ["TorchTarget", "load_members", "load_model", "train_classifier"]


class TorchTarget:
    """A classifier returning logits, scored by per-example cross-entropy.

    >>> import torch
    >>> target = TorchTarget(torch.nn.Linear(2, 2, bias=False))  # zero input: equal logits, loss ln 2
    >>> target.loss(np.zeros((3, 2)), np.array([0, 1, 1])).round(4).tolist()
    [0.6931, 0.6931, 0.6931]
    """

    def __init__(self, model, *, epsilon: float | None = None):
        self.model, self.epsilon = model.eval(), epsilon

    def loss(self, x, y) -> np.ndarray:
        """Cross-entropy of each example (x of shape (n, d), integer labels y)."""
        torch = require_torch()
        with torch.no_grad():
            logits = self.model(torch.as_tensor(np.asarray(x, dtype=np.float32)))
            losses = torch.nn.functional.cross_entropy(logits, torch.as_tensor(np.asarray(y, dtype=np.int64)), reduction="none")
        return losses.double().numpy()

    def accuracy(self, x, y) -> float:
        """The share of ``x`` whose largest logit is the label ``y``."""
        torch = require_torch()
        with torch.no_grad():
            predictions = self.model(torch.as_tensor(np.asarray(x, dtype=np.float32))).argmax(1).numpy()
        return float(np.mean(predictions == np.asarray(y)))


@dataclasses.dataclass(frozen=True)
class TrainingRecipe:
    """How a target (and its helper) is trained: Adam for ``epochs``, DP-SGD (Opacus) when ``dp_epsilon`` is set."""

    architecture: str = "mlp"
    hidden: int = 64
    depth: int = 1
    epochs: int = 10
    batch_size: int = 64
    learning_rate: float = 1e-2
    dp_epsilon: float | None = None
    dp_delta: float = 1e-5
    max_grad_norm: float = 1.0

    def __post_init__(self):
        check_count(self.epochs, "epochs", minimum=1)
        check_count(self.batch_size, "batch_size", minimum=1)
        check_positive(self.learning_rate, "learning_rate")
        if self.dp_epsilon is not None:
            check_positive(self.dp_epsilon, "dp_epsilon")


def train_classifier(x, y, recipe: TrainingRecipe, *, num_classes: int, image_shape=None, seed: int = 0) -> TorchTarget:
    """Train a :func:`build_classifier` model on (x, y) by ``recipe``; seeded by ``seed``.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 3)).astype(np.float32)
    >>> y = (x[:, 0] > 0).astype(np.int64)
    >>> target = train_classifier(x, y, TrainingRecipe(epochs=20), num_classes=2)
    >>> target.accuracy(x, y) > 0.9
    True
    """
    torch = require_torch()
    from ..models.classifiers import build_classifier

    x = torch.as_tensor(np.asarray(x, dtype=np.float32))
    y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    model = build_classifier(
        recipe.architecture, input_dim=x.shape[1], num_classes=num_classes, hidden=recipe.hidden, depth=recipe.depth, image_shape=image_shape, seed=seed
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=recipe.batch_size, shuffle=True, generator=generator)
    epsilon = None
    if recipe.dp_epsilon is not None:
        PrivacyEngine = require("opacus", purpose="DP-SGD targets").PrivacyEngine
        engine = PrivacyEngine(accountant="prv", secure_mode=False)
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            target_epsilon=recipe.dp_epsilon,
            target_delta=recipe.dp_delta,
            epochs=recipe.epochs,
            max_grad_norm=recipe.max_grad_norm,
            noise_generator=generator,
        )
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    for _ in range(recipe.epochs):
        for batch_x, batch_y in loader:
            if len(batch_x) == 0:  # Poisson sampling can draw an empty batch
                continue
            optimizer.zero_grad()
            loss_fn(model(batch_x), batch_y).backward()
            optimizer.step()
    if recipe.dp_epsilon is not None:
        epsilon = float(engine.get_epsilon(recipe.dp_delta))
        model = model._module
    return TorchTarget(model, epsilon=epsilon)


def load_members(path, name: str = "members") -> tuple[np.ndarray, np.ndarray]:
    """Read (x, y) from a ``.npz`` (arrays ``x`` and ``y``), or a ``.csv`` or ``.parquet`` whose last column is the label.

    The reader is :func:`privaudit._core.readers.read_labelled`, shared by every command that takes a tabular dataset.
    """
    return read_labelled(path, f"--{name}")


def load_model(path, spec_path=None) -> tuple[TorchTarget, dict]:
    """Rebuild a :func:`build_classifier` model from its JSON spec and load its ``state_dict`` (weights only)."""
    torch = require_torch()
    from ..models.classifiers import build_classifier

    path = Path(path)
    spec_path = Path(spec_path) if spec_path is not None else path.with_suffix(".json")
    try:
        spec = json.loads(spec_path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"`--spec`: cannot read the architecture spec {str(spec_path)!r}: {error}") from None
    allowed = {"architecture", "input_dim", "num_classes", "hidden", "depth", "image_shape"}
    if not isinstance(spec, dict) or set(spec) - allowed or not {"architecture", "input_dim", "num_classes"} <= set(spec):
        raise ValueError(f"`--spec` must be a JSON object with architecture, input_dim, num_classes (and optionally hidden, depth, image_shape), got {spec!r}")
    model = build_classifier(**spec)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except Exception as error:  # a wrong file or a mismatched architecture
        raise ValueError(f"`--model`: cannot load {str(path)!r} as a state_dict of {spec['architecture']}: {error}") from None
    return TorchTarget(model), spec
