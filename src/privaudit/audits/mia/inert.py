"""What a run of the membership-inference audit did not use: the fields its records and results.json leave out."""

from __future__ import annotations

from typing import Any

from ..family_test import inert_family_fields

__all__ = ["INERT_IN_MODE", "inert_fields"]


#: what each mode of the audit leaves unused: attack mode bounds nothing; canary mode trains no trial models; leave-one-out draws no canaries
INERT_IN_MODE = {
    "attack": ("num_canaries", "num_trial_models", "delta", "claimed_epsilon", "claimed_delta"),
    "canary": ("num_trial_models",),
    "leave-one-out": ("num_canaries",),
}


def inert_fields(config: Any) -> frozenset[str]:
    """The fields of an :class:`~privaudit.audits.mia.config.MIAConfig` that did not apply to its run.

    The embedded dataset beside the user's ``--data``; the built-in MLP's
    epochs beside the user's ``--train`` or reference models (a user's
    ``--model`` alone has its references trained by that MLP);
    how ``--train`` takes its input without ``--train``; the user's model
    file settings without a user's model; the augmentation settings without
    augmentations; and the other modes' settings (:data:`INERT_IN_MODE`).

    >>> from privaudit.audits.mia.config import MIAConfig
    >>> sorted(inert_fields(MIAConfig(train="m:fit", data="pool.csv")))[:5]
    ['claimed_delta', 'claimed_epsilon', 'dataset', 'delta', 'epochs']
    """
    inert = set(INERT_IN_MODE.get(config.mode, ())) | inert_family_fields(config)
    if config.data is not None:
        inert.add("dataset")
    if config.train is not None or config.reference_models is not None:  # a user's --model alone still has its references trained by the built-in MLP
        inert.add("epochs")
    if config.train is None:
        inert.add("train_input")
    if config.model is None and config.reference_models is None:
        inert.update(("model_kind", "model_output", "factory", "trusted"))
    if not config.augment:
        inert.update(("image_shape", "shift_pixels"))
    return frozenset(inert)
