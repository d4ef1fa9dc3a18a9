"""Targets for PANORAMIA: train the embedded ones, or load a user's model and members safely.

File formats of ``privaudit audit panoramia --model MODEL --members MEMBERS``:

* ``MODEL``: the ``state_dict`` of a model built by
  :func:`privaudit.models.classifiers.build_classifier`, saved with
  ``torch.save`` (or safetensors) and read with ``weights_only=True``;
  privaudit never unpickles, and a pickle is refused as one. Beside it a
  JSON *architecture spec* (``--spec``, default ``MODEL`` with the suffix
  ``.json``) holding ``architecture`` ("linear", "mlp" or "cnn"),
  ``input_dim``, ``num_classes`` and, as needed, ``hidden``, ``depth`` and
  ``image_shape``, and what changes the function without changing the
  weights' shapes: ``activation`` ("tanh") for "mlp" and "cnn", and
  ``pooling`` ("avg") for "cnn". A ReLU network's weights fit a Tanh network
  of the same sizes, so these are never assumed: a spec without them is
  refused, unless the state dict records an architecture that agrees with
  the spec (:func:`save_classifier` writes both);
* ``MEMBERS`` (and ``--non-members``): a ``.npz`` with arrays ``x`` (n, d)
  and ``y`` (n,) of integer labels, read with ``allow_pickle=False``, or a
  ``.csv`` (or ``.parquet``) of numbers (optional header) whose label column
  is ``--label-col``, or the one column that could be the label, or else is
  refused (:func:`privaudit._core.labelled.read_labelled`).

The model's loss is the per-example cross-entropy of its logits.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..._core.extras import require
from ..._core.files import read_json, write_json_atomic
from ..._core.labelled import LabelledData, read_labelled
from ..._core.validation import check_count, check_positive
from ...models.classifiers import build_classifier
from ...models.device import require_torch
from ...models.loading import read_state_dict

__all__ = ["BUILT_WITH", "SPEC_FIELDS", "TorchTarget", "load_members", "load_model", "save_classifier", "train_classifier"]

SPEC_FIELDS = ("architecture", "input_dim", "num_classes", "hidden", "depth", "image_shape", "activation", "pooling")
_SIZES = ("architecture", "input_dim", "num_classes", "hidden", "depth", "image_shape")  # what build_classifier takes
_SIZES_USED = {"linear": (), "mlp": ("hidden", "depth"), "cnn": ("image_shape",)}  # beyond architecture, input_dim, num_classes
# what build_classifier builds that the state dict's shapes do not show, per architecture: a spec must say it
BUILT_WITH: dict[str, tuple[str, ...]] = {"linear": (), "mlp": ("activation",), "cnn": ("activation", "pooling")}
_DEFAULTS = {"hidden": 64, "depth": 1, "image_shape": None}
RECORD_KEY = "privaudit.architecture"  # the entry of a state dict's ``_metadata`` that records its spec


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


def load_members(path, name: str = "members", *, label_col: str | None = None) -> LabelledData:
    """Read x, y and the label convention from a ``.npz`` (arrays ``x`` and ``y``), or a ``.csv`` or ``.parquet``.

    ``label_col`` names the label column of a ``.csv`` or ``.parquet`` and is
    not applied to an ``.npz``, whose labels are its array ``y`` by key. The
    reader is :func:`privaudit._core.labelled.read_labelled`, shared by every
    command that takes a tabular dataset, with its one rule for the label.
    """
    npz = Path(path).suffix.lower() == ".npz"
    return read_labelled(path, f"--{name}", label_col=None if npz else label_col)


def _design(model) -> dict[str, str]:
    """What the state dict's shapes do not show, read from the modules: the activations and the pooling."""
    torch = require_torch()
    activations = sorted({type(module).__name__.lower() for module in model.modules() if type(module).__module__ == torch.nn.modules.activation.__name__})
    pooling = sorted({type(module).__name__.lower().removesuffix("pool2d") for module in model.modules() if type(module).__name__.endswith("Pool2d")})
    design = {}
    if activations:
        design["activation"] = "+".join(activations)
    if pooling:
        design["pooling"] = "+".join(pooling)
    return design


def _plain_spec(spec: dict) -> dict:
    """``spec`` with the sizes' defaults filled in and ``image_shape`` a list, so that two specs compare equal when they build the same."""
    plain = {**_DEFAULTS, **spec}
    if plain["image_shape"] is not None and isinstance(plain["image_shape"], list | tuple):
        plain["image_shape"] = list(plain["image_shape"])
    return plain


def save_classifier(model, path, *, architecture: str, input_dim: int, num_classes: int, hidden: int = 64, depth: int = 1, image_shape=None) -> dict:
    """Save a :func:`build_classifier` model for ``privaudit audit panoramia --model``: its state dict and, beside it, its spec.

    ``model`` is a ``torch.nn.Module`` or a :class:`TorchTarget`. The state
    dict (``torch.save``, read back with ``weights_only=True``) records the
    spec in its ``_metadata``, with the activation and pooling read from the
    model's own modules; the spec is also written to ``path`` with the
    suffix ``.json``. Returns the spec.

    >>> import tempfile, os
    >>> from privaudit.models.classifiers import build_classifier
    >>> folder = tempfile.mkdtemp()
    >>> spec = save_classifier(build_classifier("mlp", input_dim=3, num_classes=2, hidden=4), os.path.join(folder, "m.pt"),
    ...                        architecture="mlp", input_dim=3, num_classes=2, hidden=4)
    >>> spec["activation"], sorted(os.listdir(folder))
    ('tanh', ['m.json', 'm.pt'])
    >>> load_model(os.path.join(folder, "m.pt"))[1] == spec
    True
    """
    torch = require_torch()
    module = model.model if isinstance(model, TorchTarget) else model
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"`model` must be a torch.nn.Module or a TorchTarget, got {type(model).__name__}")
    sizes: dict[str, Any] = dict(architecture=architecture, input_dim=input_dim, num_classes=num_classes, hidden=hidden, depth=depth)
    if image_shape is not None:
        sizes["image_shape"] = [int(size) for size in image_shape]
    spec = {**sizes, **_design(module)}
    path = Path(path)
    state = module.state_dict()
    state._metadata[RECORD_KEY] = dict(spec)  # type: ignore[attr-defined]
    torch.save(state, path)
    write_json_atomic(path.with_suffix(".json"), spec)
    return spec


def _read_spec(spec_path, default: Path, recorded: dict | None) -> dict:
    """The spec file, or the recorded one when no ``--spec`` was given and none lies beside the model."""
    if spec_path is None and not default.exists() and recorded is not None:
        return dict(recorded)
    path = Path(spec_path) if spec_path is not None else default
    spec = read_json(path, "--spec")
    allowed = ", ".join(SPEC_FIELDS)
    if not isinstance(spec, dict) or set(spec) - set(SPEC_FIELDS) or not {"architecture", "input_dim", "num_classes"} <= set(spec):
        shown = " ".join(json.dumps(spec)[:200].split())
        raise ValueError(f"`--spec` must be a JSON object with architecture, input_dim, num_classes (and among {allowed} as needed), got {shown}")
    return spec


def _check_design(spec: dict, recorded: dict | None, built: dict[str, str]) -> dict:
    """``spec`` with every field that changes the function but not the shapes present, and agreeing with the record and the model built."""
    architecture = spec["architecture"]
    if recorded is not None:
        mine, theirs = _plain_spec(spec), _plain_spec(recorded)
        compared = (
            "architecture",
            "input_dim",
            "num_classes",
            *_SIZES_USED.get(architecture, ()),
            *(field for field in ("activation", "pooling") if field in spec),
        )
        for field in compared:
            if mine.get(field) != theirs.get(field):
                raise ValueError(
                    f"`--spec` does not match the architecture recorded in `--model`: `{field}` is {mine.get(field)!r} in the spec "
                    f"and {theirs.get(field)!r} in the weights"
                )
        spec = {**{field: recorded[field] for field in BUILT_WITH.get(architecture, ()) if field in recorded}, **spec}
    for field in BUILT_WITH.get(architecture, ()):
        if field not in spec:
            raise ValueError(
                f"`--spec` must record `{field}` (privaudit's {architecture} has {field} {built.get(field)!r}): weights of another "
                f"{field} fit the same shapes, so it is never assumed"
            )
        if spec[field] != built.get(field):
            raise ValueError(
                f"`--spec`: `{field}` must be {built.get(field)!r}, what privaudit's {architecture} is built with, got {spec[field]!r}; "
                "audit a network of another design with `--model-kind torch --factory package.module:callable`"
            )
    return spec


def _check_shapes(model, state: dict, path: Path, architecture: str) -> None:
    expected = model.state_dict()
    problems = [f"missing {key}" for key in expected if key not in state]
    problems += [f"unexpected {key}" for key in state if key not in expected]
    problems += [
        f"{key} {tuple(state[key].shape)} vs {tuple(value.shape)}" for key, value in expected.items() if key in state and state[key].shape != value.shape
    ]
    if problems:
        raise ValueError(
            f"`--model`: cannot load {str(path)!r} as a state_dict of {architecture}: the weights do not fit the spec (file vs spec): "
            + ", ".join(problems[:3])
        )


def load_model(path, spec_path=None) -> tuple[TorchTarget, dict]:
    """Rebuild a :func:`build_classifier` model from its spec and load its ``state_dict`` (weights only, never unpickled).

    The spec is ``spec_path``, else ``path`` with the suffix ``.json``, else
    the spec the state dict records (:func:`save_classifier`). It must name
    the activation (and, for "cnn", the pooling), or the state dict must
    record them for an architecture that agrees with it; the weights' keys
    and shapes must fit the model it builds.
    """
    require_torch()

    path = Path(path)
    state = read_state_dict(path, "--model")
    recorded = (getattr(state, "_metadata", None) or {}).get(RECORD_KEY)
    recorded = recorded if isinstance(recorded, dict) and "architecture" in recorded else None
    spec = _read_spec(spec_path, path.with_suffix(".json"), recorded)
    try:
        model = build_classifier(**{key: spec[key] for key in _SIZES if key in spec})
    except ValueError as error:
        raise ValueError(f"`--spec`: {error}") from None
    spec = _check_design(spec, recorded, _design(model))
    _check_shapes(model, state, path, spec["architecture"])
    model.load_state_dict(state, strict=True)
    return TorchTarget(model), spec
