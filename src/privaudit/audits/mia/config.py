"""The mia family's bottom layer: the config, its constants, and the checks its validation runs (bounds, text pools, augmentation)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..._core.validation import check_choice, check_count, check_fraction, check_positive, check_probability
from ...models.loading import KINDS, check_import_path
from ...models.outputs import OUTPUT_KINDS
from ..family_test import check_family_fields
from ..verdicts import check_claim_fields
from .training import TRAIN_INPUTS

__all__ = [
    "AUGMENTATIONS",
    "BOUND_METHODS",
    "DATASETS",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_DELTA",
    "MIAConfig",
    "MIN_CANARIES",
    "MIN_RECORDS",
    "MODES",
    "THREAT_MODEL",
    "THREAT_MODELS",
    "check_augment_settings",
    "check_bound_config",
    "check_text_config",
]


MODES = ("attack", "canary", "leave-one-out")

#: Steinke et al.'s test holds for any (ε, δ)-DP training.
BOUND_METHODS = ("steinke",)

DEFAULT_DELTA = 1e-5

DEFAULT_CONFIDENCE = 0.95

MIN_CANARIES = 20

THREAT_MODELS = {
    "canary": (
        "black-box, one training run: the target's confidence on mislabeled canaries, each included by a fair coin; "
        "calibration reference models trained by the auditor on random halves of the pool and the canaries; population samples known to be non-members"
    ),
    "leave-one-out": (
        "black-box, several training runs: each trial model's confidence on every record, included in it by its own fair coin; "
        "calibration reference models (never trial models) trained by the auditor on random halves of the pool; population samples known to be non-members"
    ),
}


def check_bound_config(config: Any) -> None:
    """Check the bound fields of an MIAConfig; ValueError naming the field and its range.

    >>> from privaudit.audits.mia import MIAConfig
    >>> MIAConfig(mode="canary", num_canaries=5)
    Traceback (most recent call last):
    ...
    ValueError: `num_canaries` must be an integer in [20, inf), got 5
    """
    check_choice(config.mode, "mode", MODES)
    check_count(config.num_canaries, "num_canaries", minimum=MIN_CANARIES)
    check_count(config.num_trial_models, "num_trial_models", minimum=1)
    check_probability(config.delta, "delta")
    if config.mode != "attack" and (config.model is not None or config.reference_models is not None):
        raise ValueError(
            f"`mode` {config.mode!r} (--mode) draws membership by fair coins and trains every model: "
            "it cannot take the user's `model` (--model) or `reference_models` (--reference-models); use --mode attack"
        )
    check_family_fields(
        config, refused=None if config.mode == "canary" else "needs `mode` 'canary' (--mode canary): one training run, its canaries by fair coins"
    )
    if config.mode != "attack" and getattr(config, "augment", ()):
        raise ValueError(f"`augment` (--augment) must be empty with `mode` {config.mode!r}: the bound modes score each record's own query only")


def check_text_config(config: Any) -> None:
    """A text-pool audit's settings (``model_kind`` "huggingface"): a ``.txt`` pool, the user's references and members by row."""
    if config.data is None or not str(config.data).lower().endswith(".txt"):
        raise ValueError(f"`--target-kind huggingface` needs `--data` a .txt pool of texts, one record a line, got {config.data!r}")
    if config.reference_models is None:
        raise ValueError("`--target-kind huggingface` needs `--reference-models` (a directory of saved causal LMs) and `--reference-membership`")
    unused = [
        option
        for option, value in (("--members-col", config.members_col), ("--id-col", config.id_col), ("--augment", config.augment), ("--train", config.train))
        if value
    ]
    if unused:
        raise ValueError(f"`--target-kind huggingface` audits a text pool by row: {', '.join(unused)} do not apply")


AUGMENTATIONS = ("flip", "shift")


def check_augment_settings(config: Any) -> None:
    """The augmentation fields of a :class:`~privaudit.audits.mia.config.MIAConfig`, checked on construction (before any pool is read)."""
    for name in config.augment:
        check_choice(name, "augment", AUGMENTATIONS)
    check_count(config.shift_pixels, "shift_pixels", minimum=1)
    shape = config.image_shape
    if shape is not None and (len(shape) != 3 or not all(isinstance(side, int) and not isinstance(side, bool) and side >= 1 for side in shape)):
        raise ValueError(f"`image_shape` (--image-shape) must be three positive integers (channels, height, width), got {shape!r}")


THREAT_MODEL = "black-box: the target's confidence on each record; reference models trained by the auditor on random halves of the pool; population samples known to be non-members"

DATASETS = ("digits", "breast-cancer")

MIN_RECORDS = 20


@dataclasses.dataclass(frozen=True)
class MIAConfig:
    """What to train and attack; every field is checked on construction.

    ``population_fraction`` of the pool are the RMIA population samples z
    (never in the target, left out of the evaluation; RMIA's scores have
    resolution 1/|z|, and on digits 40% beat 10% at TPR at 1% FPR,
    benchmarks/mia.py); ``offline_a`` is
    RMIA's offline parameter a, ``gamma`` its γ; ``global_variance`` makes
    LiRA fit one variance per side (the paper's choice for few references).
    """

    dataset: str = "digits"
    data: str | None = None  # the user's .npz/.csv/.parquet pool instead of `dataset`
    label_col: str | None = None
    train: str | None = None  # "package.module:fn"; None: the built-in overfitted MLP
    train_input: str = "array"  # what `train` gets as x_train: "array" (float32 NumPy) or "dataframe" (pandas, the file's column names)
    epochs: int = 200  # of the built-in MLP (ignored with `train`)
    num_references: int = 8
    population_fraction: float = 0.4
    offline_a: float = 0.3
    gamma: float = 1.0
    global_variance: bool = True
    confidence: float = 0.95
    num_vulnerable: int = 10
    seed: int = 0
    # the user's trained target instead of one trained by the audit (see privaudit.models.loading)
    model: str | None = None
    model_kind: str = "skops"  # --target-kind
    factory: str | None = None  # with model_kind "torch"
    model_output: str = "auto"  # "auto": checked on the model's outputs; or "logits", "probabilities", "log-probabilities"
    trusted: tuple[str, ...] = ()  # types a skops file may hold beyond scikit-learn's and numpy's (only for files the user trusts)
    members: str | None = None  # the target's training records in the pool (with `model`): row indices, or ids of `id_col`
    members_col: str | None = None  # or a column of the pool, 1 for the target's members (instead of `members`)
    id_col: str | None = None  # a column of the pool holding each record's id (else a record's id is its row)
    # the user's reference models (files of `model_kind` in a directory) and their (k, n) membership .npy: nothing is trained
    reference_models: str | None = None
    reference_membership: str | None = None
    # query augmentations of image records (see privaudit.audits.mia.augment): "flip", "shift"; the images' (C, H, W) unless the embedded dataset declares it
    augment: tuple[str, ...] = ()
    image_shape: tuple[int, int, int] | None = None
    shift_pixels: int = 1
    # ε lower bounds (privaudit.audits.mia.bounds): "attack" (statistics only), "canary" or "leave-one-out"
    mode: str = "attack"
    num_canaries: int = 200  # canaries of mode "canary"
    num_trial_models: int = 4  # trial models of mode "leave-one-out"
    delta: float = 1e-5  # δ of the bound
    claimed_epsilon: float | None = None  # bound modes: the user's end-to-end claim for the training (None: no verdict)
    claimed_delta: float | None = None  # its δ; None: `delta`
    # mode "canary": the claim's own family (privaudit.audits.family_test), tested by order statistics beside the generic bound
    family: str | None = None
    family_claim: float | None = None
    family_sampling_rate: float | None = None
    family_steps: int | None = None

    def __post_init__(self) -> None:
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        if self.claimed_epsilon is not None and self.mode == "attack":
            raise ValueError("`claimed_epsilon` (--claimed-epsilon) needs a bound mode (--mode canary or leave-one-out): attack mode bounds no ε")
        if self.train is not None:
            check_import_path(self.train, "train")
        check_choice(self.dataset, "dataset", DATASETS)
        check_choice(self.train_input, "train_input", TRAIN_INPUTS)
        if self.label_col is not None and self.data is None:  # the embedded datasets have no columns to name: never ignored
            raise ValueError("`label_col` (--label-col) needs `data` (--data) with a .csv or .parquet file")
        if isinstance(self.num_references, bool) or not isinstance(self.num_references, int) or self.num_references < 4 or self.num_references % 2:
            raise ValueError(f"`num_references` must be an even integer >= 4, got {self.num_references!r}")
        check_count(self.epochs, "epochs", minimum=1)
        if not 0.0 < check_fraction(self.population_fraction, "population_fraction") < 0.5:
            raise ValueError(f"`population_fraction` must be in (0, 0.5), got {self.population_fraction:g}")
        check_fraction(self.offline_a, "offline_a")
        check_positive(self.gamma, "gamma")
        check_probability(self.confidence, "confidence")
        check_count(self.num_vulnerable, "num_vulnerable")
        check_count(self.seed, "seed")
        if (self.model is None) != (self.members is None and self.members_col is None) or None not in (self.members, self.members_col):
            raise ValueError(
                "`model` (--model) and `members` (--members) go together: the user's target and the rows it was trained on "
                "(or `members_col` (--members-col) instead of `members`)"
            )
        if (self.reference_models is None) != (self.reference_membership is None) or (self.reference_models is not None and self.model is None):
            raise ValueError(
                "`reference_models` (--reference-models) needs `reference_membership` (--reference-membership) and the user's target (--model, --members)"
            )
        if self.augment or self.image_shape is not None:
            check_augment_settings(self)

        # checked whether or not --model is given: a setting that is not one of the choices is a typo, never ignored
        check_choice(self.model_kind, "model_kind", KINDS)
        check_choice(self.model_output, "model_output", ("auto",) + OUTPUT_KINDS)
        if self.model_kind == "huggingface":
            check_text_config(self)

        check_bound_config(self)
