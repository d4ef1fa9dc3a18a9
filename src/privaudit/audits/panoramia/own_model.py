"""PANORAMIA on a user's model: ``privaudit audit panoramia --model MODEL --members MEMBERS``, the model loaded safely and audited on its own members."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ..._core.conventions import Convention
from ..._core.resources import check_memory
from ..._core.validation import check_choice
from ...models.loading import load_model as load_user_model
from ..blind import BlindBaseline, blind_baseline
from .game import PanoramiaSettings, make_generator, run_panoramia
from .memory import spec_memory_estimate
from .targets import TrainingRecipe, load_members, load_model, train_classifier

__all__ = ["MODEL_KINDS", "labels_as_members", "members_blind_baseline", "run_panoramia_on_model"]


MODEL_KINDS = ("privaudit", "torch", "torch-export", "skops", "onnx")


def _user_target(model_path, model_kind, factory, spec_path, x, y, output="auto", trusted=()):
    """(loss function, spec of the helper, conventions) of the user's model; the helper is the model's architecture or an MLP."""
    check_choice(model_kind, "--model-kind", MODEL_KINDS)
    if model_kind == "privaudit":
        if factory is not None:
            raise ValueError("`--factory` builds a torch architecture: give it with `--model-kind torch`")
        if output != "auto" or trusted:
            raise ValueError("`--model-output` and `--trusted` are for a model loaded by `--model-kind`; a privaudit classifier returns logits")
        target, spec = load_model(model_path, spec_path)
        if x.shape[1] != spec["input_dim"] or y.max() >= spec["num_classes"]:
            raise ValueError(f"`--members` must have {spec['input_dim']} features and labels < {spec['num_classes']}, got {x.shape[1]} and max label {y.max()}")
        return target.loss, spec, ()
    if spec_path is not None:
        raise ValueError("`--spec` describes a privaudit classifier; it has no meaning with `--model-kind " + model_kind + "`")

    loaded = load_user_model(model_path, kind=model_kind, factory=factory, output=output, trusted=trusted)
    try:
        loaded.loss(x[:2], y[:2])  # the members fit the model: features accepted, labels within its outputs
    except ValueError as error:
        raise ValueError(f"`--members` do not fit the model in {str(model_path)!r}: {error}") from None
    except Exception as error:  # a framework's own error on inputs of the wrong shape
        raise ValueError(f"`--members` do not fit the model in {str(model_path)!r}: {type(error).__name__}: {' '.join(str(error).split())[:200]}") from None
    loaded = loaded.decide_output(x)  # once per audit, on every member: logits, probabilities or log-probabilities
    conventions = (loaded.output_convention,) if loaded.output_convention is not None else ()
    # the architecture is unknown: the helper is a privaudit MLP on the members' features
    return loaded.loss, {"architecture": "mlp", "input_dim": int(x.shape[1]), "num_classes": int(y.max()) + 1, "hidden": 64, "depth": 1}, conventions


def run_panoramia_on_model(
    model_path,
    members_path,
    *,
    spec_path=None,
    non_members_path=None,
    inclusion_randomised=False,
    generator="mst",
    helper_epochs: int = 10,
    settings: PanoramiaSettings = PanoramiaSettings(),
    model_kind: str = "privaudit",
    factory: str | None = None,
    label_col: str | None = None,
    model_output: str = "auto",
    trusted=(),
) -> tuple[dict, dict, tuple[Convention, ...]]:
    """Audit a user's saved classifier on its members (file formats in :mod:`privaudit.audits.panoramia.targets`).

    Returns (results by target, game scores by target, the conventions the
    audit rests on: the label column of each of ``members_path`` and
    ``non_members_path``, and the model's output kind). ``label_col`` names the label column of whichever
    of them is a ``.csv`` or ``.parquet``; without it each such file's label
    column is decided by check or refused (:mod:`privaudit._core.labelled`).

    ``model_kind`` "privaudit" reads a privaudit classifier's state dict and
    spec, and the helper has the model's architecture; any other kind is
    loaded by :func:`privaudit.models.loading.load_model` (``factory`` for
    "torch"), and the helper is a privaudit MLP (64 hidden units) of the
    members' input dimension, since the model's architecture is unknown. The
    helper is trained for ``helper_epochs`` on generated data;
    ``inclusion_randomised`` declares that members and non-members were split
    by fair coins before training (enables O(1)). ``model_output`` and
    ``trusted`` go to :func:`~privaudit.models.loading.load_model` as
    ``output`` and ``trusted``.
    """
    make_generator(generator)  # a bad name fails before any file is read
    _check_label_col(label_col, members_path, non_members_path)
    if model_kind == "privaudit":  # sizes the machine cannot hold are refused before any file is loaded or model built
        check_memory(*spec_memory_estimate(model_path, spec_path))
    members = load_members(members_path, label_col=label_col)
    x, y = members.x, members.y
    loss, spec, output_conventions = _user_target(model_path, model_kind, factory, spec_path, x, y, model_output, trusted)
    conventions: tuple[Convention, ...] = (members.label, *output_conventions)
    non_members = None
    if non_members_path is not None:
        read = load_members(non_members_path, "non-members", label_col=label_col)
        non_members, conventions = (read.x, labels_as_members(members, read)), (*conventions, read.label)
    if inclusion_randomised and non_members is None:
        raise ValueError("`--inclusion-randomised` needs `--non-members` (the candidates the coins left out)")
    candidates = None
    if inclusion_randomised and non_members is not None:
        candidates = (np.r_[x, non_members[0]], np.r_[y, non_members[1]], np.r_[np.ones(len(x), bool), np.zeros(len(non_members[0]), bool)])
    recipe = TrainingRecipe(architecture=spec["architecture"], hidden=spec.get("hidden", 64), depth=spec.get("depth", 1), epochs=helper_epochs)
    image_shape = spec.get("image_shape")

    def train_helper(hx, hy, seed):
        return train_classifier(hx, hy, recipe, num_classes=spec["num_classes"], image_shape=image_shape, seed=seed).loss

    timings: dict[str, float] = {}
    result, game = run_panoramia(
        loss,
        x,
        y,
        generator=make_generator(generator),
        train_helper=train_helper,
        settings=settings,
        num_classes=spec["num_classes"],
        non_members=non_members,
        one_run_candidates=candidates,
        target_name=str(model_path),
        generator_name=generator,
        timings=timings,
    )
    name = str(Path(model_path).stem)
    return {name: {"audit": result, "training": dataclasses.asdict(recipe), "timings_s": timings}}, {name: game}, conventions


def _check_label_col(label_col: str | None, *paths) -> None:
    """Refuse ``--label-col`` when no file it could apply to is given: every one is an .npz, labelled by its array 'y'."""
    if label_col is not None and all(path is None or Path(path).suffix.lower() == ".npz" for path in paths):
        raise ValueError(
            "`--label-col` names the label column of a .csv or .parquet `--members` or `--non-members`; "
            "an .npz's labels are its array 'y', so give no `--label-col` with .npz files only"
        )


def labels_as_members(members, others) -> np.ndarray:
    """``others``' labels in ``members``' codes, their columns checked to be the members' own.

    Each file's text labels are coded 0, 1, ... in its own sorted order, so a
    non-member file holding only "dog" would give it the members' code of
    "cat": the codes are mapped through the class names. Two files with
    headers must name the same columns in the same order (x is read by
    position). ValueError naming ``--non-members`` otherwise.
    """
    if members.feature_names is not None and others.feature_names is not None and members.feature_names != others.feature_names:
        raise ValueError(
            f"`--non-members` must have the columns of `--members` in the same order, got {list(others.feature_names)} against {list(members.feature_names)}"
        )
    if bool(members.classes) != bool(others.classes):
        raise ValueError("`--non-members` must write its labels as `--members` does: one file's labels are text and the other's numbers")
    if not members.classes:
        return others.y
    code = {name: index for index, name in enumerate(members.classes)}
    unknown = sorted(set(others.classes) - set(code))
    if unknown:
        raise ValueError(f"`--non-members` has label(s) {unknown} that `--members` never uses (its classes: {list(members.classes)})")
    return np.array([code[name] for name in others.classes], dtype=np.int64)[others.y]


def _blind_columns(read) -> tuple[list[str], np.ndarray]:
    names = list(read.feature_names or (f"x[{i}]" for i in range(read.x.shape[1])))
    labels = np.asarray(read.classes, dtype=object)[read.y] if read.classes else read.y.astype(str)  # a class, not a quantity
    return names, labels


def members_blind_baseline(members_path, non_members_path, *, label_col: str | None = None, seed: int = 0) -> BlindBaseline:
    """The blind baseline of your ``--members`` against your ``--non-members``: trees on the records and labels alone, never the model.

    RM;RN, and O(1) with ``--inclusion-randomised``, read the two files as
    one random split; the baseline says when the records alone tell them
    apart (:mod:`privaudit.audits.blind`). Both files are read by the audit's
    own reader; the features take the members' header names (``x[i]``
    without one) and the label is a category.
    """
    members = load_members(members_path, label_col=label_col)
    others = load_members(non_members_path, "non-members", label_col=label_col)
    names, member_labels = _blind_columns(members)
    _, other_labels = _blind_columns(others)
    x = np.vstack([members.x, others.x])
    table: dict[str, np.ndarray] = {name: x[:, i] for i, name in enumerate(names)}
    table["label" if "label" not in table else "label (class)"] = np.r_[member_labels, other_labels].astype(str)
    return blind_baseline(table, np.r_[np.ones(len(members.x), bool), np.zeros(len(others.x), bool)], seed=seed)
